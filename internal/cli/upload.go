package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

type uploadCmd struct {
	client         clientFlags
	claim          claimFlags
	idempotencyKey string
	resume         bool
}

func newUploadCmd(env Env) *cobra.Command {
	u := &uploadCmd{}
	cmd := &cobra.Command{
		Use:   "upload [--resume] --ns NS FILE",
		Short: "Store a file by direct upload (init, PUT, confirm) and print its reference",
		Long: `Store FILE in namespace NS the way a browser or mobile client would: ask
the server for an upload (declaring the size and sha256), PUT the bytes
straight to the URL it answers (object storage, or the server itself),
then confirm, and print the reference as one line of JSON, like put.

FILE must be a regular file: its sha256 is computed before the upload.
With --idempotency-key, running the command again (after a network
failure, say) continues the same upload instead of starting another.

With --resume the file is sent over tus, the resumable upload protocol,
in chunks of 16 MiB, each checked by the server (sha256) as it arrives.
A connection cut on the way is resumed from the server's offset (up to 5
retries in a row without progress, waiting 0.5 s, then twice as long
each time). The upload's URL is kept in a state file under the user's
cache directory (claimcheck/uploads, $XDG_CACHE_HOME or ~/.cache on
Linux) until the server answers the reference, so after a failure, a
stop or a reboot the same command continues where the server is; a file
whose size, modification time or sha256 changed starts a new upload. A
resumable upload carries only the content type: labels, consumers and
idempotency keys are not available with --resume.`,
		Example: `  claimcheck upload --ns media video.mp4 > ref.json
  claimcheck upload --ns media --idempotency-key job-42 --content-type video/mp4 video.mp4
  claimcheck upload --resume --ns media big.iso > ref.json   # again after a cut: continues`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return u.run(cmd, env, args[0]) },
	}
	u.client.register(cmd, env)
	u.claim.register(cmd)
	cmd.Flags().StringVar(&u.idempotencyKey, "idempotency-key", "", "the same key (per namespace) continues the same upload")
	cmd.Flags().BoolVar(&u.resume, "resume", false, "upload over tus in checked chunks; after an interruption the same command continues from the server's offset")
	return cmd
}

func (u *uploadCmd) run(cmd *cobra.Command, env Env, path string) error {
	labels, err := u.claim.check()
	if err != nil {
		return err
	}
	if path == "-" {
		return usageError{errors.New("upload needs a file, not standard input: the size and sha256 are declared before the bytes are sent (use put for a stream)")}
	}
	if u.resume {
		for _, name := range []string{"label", "consumers", "consumer-names", "idempotency-key"} {
			if cmd.Flags().Changed(name) {
				return usageError{fmt.Errorf("--%s cannot be used with --resume: a resumable upload carries only --content-type", name)}
			}
		}
	}
	req := claimcheck.UploadRequest{ContentType: u.claim.contentType, Labels: labels, Consumers: u.claim.consumers,
		ConsumerNames: u.claim.consumerNames, IdempotencyKey: u.idempotencyKey}
	c, err := u.client.client()
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return usageError{fmt.Errorf("%s is not a regular file", path)}
	}
	req.Size = st.Size()
	if req.Digest, err = hashFile(env, f, req.Size); err != nil {
		return err
	}

	ctx := cmd.Context()
	if u.resume {
		ref, err := u.uploadResumable(ctx, env, c, f, st, req.Digest)
		if err != nil {
			return err
		}
		return json.NewEncoder(env.Stdout).Encode(ref)
	}
	up, err := c.InitUpload(ctx, u.claim.ns, req)
	if err != nil {
		return err
	}
	if up.State == claimcheck.StatePending {
		body, finish := withProgress(env.Stderr, f, req.Size, "upload")
		err := c.SendUpload(ctx, up, body)
		finish()
		if err != nil {
			return err
		}
	}
	// Confirm also when the upload was already confirmed (a repeated
	// idempotency key): it answers the same reference.
	ref, err := c.ConfirmUpload(ctx, up.ID)
	if err != nil {
		return err
	}
	return json.NewEncoder(env.Stdout).Encode(ref)
}
