package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// DefaultServer is the server the client commands talk to when neither
// --server nor $CLAIMCHECK_SERVER says otherwise.
const DefaultServer = "http://127.0.0.1:8080"

// clientFlags are the flags every client command takes.
type clientFlags struct {
	server string
	apiKey string
}

func (f *clientFlags) register(cmd *cobra.Command, env Env) {
	server := env.Getenv("CLAIMCHECK_SERVER")
	if server == "" {
		server = DefaultServer
	}
	cmd.Flags().StringVar(&f.server, "server", server, "server URL (default $CLAIMCHECK_SERVER, then "+DefaultServer+")")
	cmd.Flags().StringVar(&f.apiKey, "api-key", env.Getenv("CLAIMCHECK_API_KEY"), "API key (default $CLAIMCHECK_API_KEY)")
}

func (f *clientFlags) client() (*client.Client, error) {
	var opts []client.Option
	if f.apiKey != "" {
		opts = append(opts, client.WithAPIKey(f.apiKey))
	}
	c, err := client.New(f.server, opts...)
	if err != nil {
		return nil, usageError{fmt.Errorf("--server %q: %w", f.server, err)}
	}
	return c, nil
}

// claim reads the REF argument and makes the client: the first steps of
// every command that works on one claim.
func (f *clientFlags) claim(arg string, stdin io.Reader) (claimcheck.Ref, *client.Client, error) {
	ref, err := readRef(arg, stdin)
	if err != nil {
		return claimcheck.Ref{}, nil, err
	}
	c, err := f.client()
	return ref, c, err
}

// readRef reads a reference given on the command line: inline JSON,
// @FILE, or - for standard input. A bare claim id is accepted too.
func readRef(arg string, stdin io.Reader) (claimcheck.Ref, error) {
	var data []byte
	var err error
	switch {
	case arg == "-":
		data, err = io.ReadAll(io.LimitReader(stdin, 64<<10))
	case strings.HasPrefix(arg, "@"):
		data, err = os.ReadFile(arg[1:])
	case claimcheck.ValidClaimID(arg):
		return claimcheck.Ref{ID: arg}, nil
	default:
		data = []byte(arg)
	}
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("reading the reference: %w", err)
	}
	return claimcheck.ParseRef(data)
}
