package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

type putCmd struct {
	client        clientFlags
	ns            string
	contentType   string
	consumers     int
	consumerNames []string
	labels        []string
}

func newPutCmd(env Env) *cobra.Command {
	p := &putCmd{}
	cmd := &cobra.Command{
		Use:   "put --ns NS FILE|-",
		Short: "Store a payload and print its reference (JSON) on stdout",
		Long: `Store FILE (or standard input, with -) in namespace NS and print the
reference as one line of JSON. The payload streams to the server; it is
never read into memory whole.`,
		Example: `  claimcheck put --ns orders big.json > ref.json
  cat dump.bin | claimcheck put --ns backups --label source=nightly -`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return p.run(cmd, env, args[0]) },
	}
	p.client.register(cmd, env)
	cmd.Flags().StringVar(&p.ns, "ns", "", "namespace to store in (required)")
	cmd.Flags().StringVar(&p.contentType, "content-type", "", "content type stored with the claim")
	cmd.Flags().IntVar(&p.consumers, "consumers", 0, "releases needed to finish the claim (fan-out)")
	cmd.Flags().StringSliceVar(&p.consumerNames, "consumer-names", nil, "names of the consumers whose releases count (comma-separated)")
	cmd.Flags().StringArrayVar(&p.labels, "label", nil, "label KEY=VALUE stored with the claim (repeatable)")
	return cmd
}

func (p *putCmd) run(cmd *cobra.Command, env Env, path string) error {
	if p.ns == "" {
		return usageError{errors.New("--ns is required: the namespace to store the payload in")}
	}
	opts := claimcheck.PutOptions{ContentType: p.contentType, Consumers: p.consumers, ConsumerNames: p.consumerNames}
	for _, l := range p.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return usageError{fmt.Errorf("--label %q: want KEY=VALUE", l)}
		}
		if opts.Labels == nil {
			opts.Labels = map[string]string{}
		}
		opts.Labels[k] = v
	}
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
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if st.Mode().IsRegular() {
			size = st.Size()
			opts.Size = size
		}
		body = f
	}
	body, finish := withProgress(env.Stderr, body, size, "put")
	ref, err := c.Put(cmd.Context(), p.ns, body, opts)
	finish()
	if err != nil {
		return err
	}
	return json.NewEncoder(env.Stdout).Encode(ref)
}
