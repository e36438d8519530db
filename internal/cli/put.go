package cli

import (
	"encoding/json"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

type putCmd struct {
	client clientFlags
	claim  claimFlags
}

func newPutCmd(env Env) *cobra.Command {
	p := &putCmd{}
	cmd := &cobra.Command{
		Use:   "put --ns NS FILE|-",
		Short: "Store a payload and print its reference (JSON) on stdout",
		Long: `Store FILE (or standard input, with -) in namespace NS and print the
reference as one line of JSON. The payload streams to the server; it is
never read into memory whole. A regular FILE is hashed first and its
sha256 sent before the body: when the namespace already holds the same
bytes, the server answers without the body being sent.`,
		Example: `  claimcheck put --ns orders big.json > ref.json
  cat dump.bin | claimcheck put --ns backups --label source=nightly -`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return p.run(cmd, env, args[0]) },
	}
	p.client.register(cmd, env)
	p.claim.register(cmd)
	return cmd
}

func (p *putCmd) run(cmd *cobra.Command, env Env, path string) error {
	labels, err := p.claim.check()
	if err != nil {
		return err
	}
	opts := claimcheck.PutOptions{ContentType: p.claim.contentType, Labels: labels,
		Consumers: p.claim.consumers, ConsumerNames: p.claim.consumerNames}
	c, err := p.client.client()
	if err != nil {
		return err
	}
	var body io.Reader = env.Stdin
	size := int64(-1)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if st.Mode().IsRegular() {
			size = st.Size()
			opts.Size = size
			if opts.Digest, err = hashFile(env, f, size); err != nil {
				return err
			}
		}
		body = f
	}
	body, finish := withProgress(env.Stderr, body, size, "put")
	ref, err := c.Put(cmd.Context(), p.claim.ns, body, opts)
	finish()
	if err != nil {
		return err
	}
	return json.NewEncoder(env.Stdout).Encode(ref)
}
