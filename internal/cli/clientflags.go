package cli

import (
	"cmp"
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
	envKey string // $CLAIMCHECK_API_KEY, used when --api-key is not given
}

func (f *clientFlags) register(cmd *cobra.Command, env Env) {
	server := env.Getenv("CLAIMCHECK_SERVER")
	if server == "" {
		server = DefaultServer
	}
	// The flag's default is shown by --help, once: it is the value in
	// force ($CLAIMCHECK_SERVER when set), so the usage text only says
	// where it comes from.
	cmd.Flags().StringVar(&f.server, "server", server, "server URL ($CLAIMCHECK_SERVER when set)")
	// The key's default is not the flag's: --help would print the
	// secret. client() takes $CLAIMCHECK_API_KEY when the flag is unset.
	cmd.Flags().StringVar(&f.apiKey, "api-key", "", "API key (default $CLAIMCHECK_API_KEY)")
	f.envKey = env.Getenv("CLAIMCHECK_API_KEY")
}

func (f *clientFlags) client() (*client.Client, error) {
	var opts []client.Option
	if key := cmp.Or(f.apiKey, f.envKey); key != "" {
		opts = append(opts, client.WithAPIKey(key))
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
	case !strings.HasPrefix(strings.TrimSpace(arg), "{"):
		// Not JSON at all: a parser's complaint about its first byte
		// would not tell the user what was expected.
		return claimcheck.Ref{}, usageError{fmt.Errorf("%q is neither a reference (inline JSON, @FILE or - for standard input) nor a claim id (cc_ followed by 22 characters)", clipArg(arg))}
	default:
		data = []byte(arg)
	}
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("reading the reference: %w", err)
	}
	return claimcheck.ParseRef(data)
}

// clipArg shortens an argument echoed in an error.
func clipArg(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
