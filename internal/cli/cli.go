// Package cli implements the claimcheck command: `serve` runs the server
// on the embedded defaults (or a config file), and the client commands
// (put, get, stat, release, rm) talk to a server over HTTP.
//
// Each subcommand lives in its own file and is built by a function that
// returns a *cobra.Command; flags are fields of a per-command struct, never
// package variables, so Main can run many times in one process (the tests
// do).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

// Env is the outside world of one run: streams and environment.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Environ lists the environment for config overrides (CLAIMCHECK_*).
	Environ func() []string
	// IsTerminal reports whether a stream is a terminal (default: a
	// *os.File that is one). Tests pretend.
	IsTerminal func(io.Writer) bool
}

func (e Env) isTerminal(w io.Writer) bool {
	if e.IsTerminal != nil {
		return e.IsTerminal(w)
	}
	return isTerminal(w)
}

// Exit codes, so scripts can tell outcomes apart without parsing text.
const (
	ExitOK       = 0
	ExitError    = 1 // any other failure
	ExitUsage    = 2 // bad flags or arguments
	ExitNotFound = 3 // no such claim
	ExitGone     = 4 // the claim existed but is finished (expired, released, deleted, …)
	ExitCorrupt  = 5 // the payload failed verification
)

// Main runs the command line args and returns the process exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.Environ == nil {
		env.Environ = os.Environ
	}
	root := newRoot(env)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, claimcheck.ErrUnauthenticated) {
		err = explainAuth(err, args, env)
	}
	fmt.Fprintf(env.Stderr, "claimcheck: %v\n", err)
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, claimcheck.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, claimcheck.ErrGone):
		return ExitGone
	case errors.Is(err, claimcheck.ErrChecksumMismatch):
		return ExitCorrupt
	}
	return ExitError
}

// explainAuth words a refusal for want of a valid API key in the command
// line's terms: the server names its HTTP header, which a CLI user never
// sets; they give --api-key or $CLAIMCHECK_API_KEY.
func explainAuth(err error, args []string, env Env) error {
	given := env.Getenv("CLAIMCHECK_API_KEY") != ""
	for _, a := range args {
		if a == "--api-key" || strings.HasPrefix(a, "--api-key=") {
			given = true
		}
	}
	if given {
		return fmt.Errorf("the server refused the API key of --api-key or $CLAIMCHECK_API_KEY: %w", err)
	}
	return fmt.Errorf("%w: the server needs an API key: give --api-key KEY or set CLAIMCHECK_API_KEY (an admin makes one with claimcheck keys create)", claimcheck.ErrUnauthenticated)
}

// usageError marks errors in the command line itself.
type usageError struct{ error }

func newRoot(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "claimcheck",
		Short: "A claim-check store for payloads too large for a message bus or workflow engine",
		Long: `claimcheck stores large payloads and hands back small references.

Run the server on the embedded defaults (SQLite + local files under ./data):
  claimcheck serve

Then store and fetch payloads through it:
  claimcheck put --ns orders big.json > ref.json
  claimcheck get @ref.json -o copy.json
  claimcheck stat @ref.json`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newServeCmd(env),
		newPutCmd(env),
		newUploadCmd(env),
		newGetCmd(env),
		newStatCmd(env),
		newLsCmd(env),
		newExtendCmd(env),
		newReleaseCmd(env),
		newRmCmd(env),
		newSweepCmd(env),
		newGCCmd(env),
		newFsckCmd(env),
		newEventsCmd(env),
		newSubscriptionsCmd(env),
		newKeysCmd(env),
		newHoldCmd(env),
		newDestroyKeyCmd(env),
		newRewrapKeysCmd(env),
		newNsCmd(env),
		newDLQCmd(env),
		newVersionCmd(env),
	)
	return root
}

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
