package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

type getCmd struct {
	client clientFlags
	out    string
	resume bool
}

func newGetCmd(env Env) *cobra.Command {
	g := &getCmd{}
	cmd := &cobra.Command{
		Use:   "get REF|@REFFILE|- [-o OUT]",
		Short: "Redeem a reference and write the payload (stdout by default)",
		Long: `Redeem a reference and write the verified payload to OUT or stdout.

With -o the payload is written to a temporary file beside OUT and renamed
into place only after its size and sha256 matched, so OUT never holds a
partial payload. On stdout, bytes are written as they arrive and a failed
verification ends the command with an error (exit code 5).

With --continue (and -o) the download goes to .OUT.<claim id>.partial
beside OUT, which is kept when the transfer breaks off; running the same
command again asks the server only for the bytes after it (a Range
request) and appends them. Before the file is renamed to OUT, the whole of
it is checked against the reference's size and sha256; a partial file
that does not match is removed (exit code 5) and the next run starts
afresh.`,
		Example: `  claimcheck get @ref.json -o payload.json
  claimcheck get --continue @ref.json -o big.tar    # again after a cut: resumes
  claimcheck put --ns tmp file | claimcheck get - > copy`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return g.run(cmd, env, args[0]) },
	}
	g.client.register(cmd, env)
	cmd.Flags().StringVarP(&g.out, "output", "o", "", "write the payload to this file instead of stdout")
	cmd.Flags().BoolVar(&g.resume, "continue", false, "resume an interrupted download into -o from its partial file, and verify the whole file")
	return cmd
}

func (g *getCmd) run(cmd *cobra.Command, env Env, arg string) error {
	if g.resume && (g.out == "" || g.out == "-") {
		return usageError{errors.New("--continue: needs -o FILE (a download to stdout cannot be resumed)")}
	}
	ref, c, err := g.client.claim(arg, env.Stdin)
	if err != nil {
		return err
	}
	if g.resume {
		return g.resumeInto(cmd.Context(), env, c, ref)
	}
	p, err := c.Redeem(cmd.Context(), ref)
	if err != nil {
		return err
	}
	defer p.Close()
	src, finish := withProgress(env.Stderr, p, p.Ref.Size, "get")
	defer finish()
	if g.out == "" || g.out == "-" {
		_, err := io.Copy(env.Stdout, src)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(g.out), "."+filepath.Base(g.out)+".partial-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), g.out); err != nil {
		return fmt.Errorf("moving the payload into place: %w", err)
	}
	return nil
}
