package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

type getCmd struct {
	client  clientFlags
	out     string
	resume  bool
	retries int
}

func newGetCmd(env Env) *cobra.Command {
	g := &getCmd{}
	cmd := &cobra.Command{
		Use:   "get REF|@REFFILE|- [-o OUT]",
		Short: "Redeem a reference and write the payload (stdout by default)",
		Long: `Redeem a reference and write the verified payload to OUT or stdout.

With -o FILE the payload is written to a temporary file beside FILE and
renamed into place only after its size and sha256 matched, so FILE never
holds a partial payload. A symbolic link is followed (the payload goes to
its target), and an existing file that is not a regular file (a device
such as /dev/null, a named pipe) is written to directly, never replaced.

On stdout (no -o, or -o -), bytes are written as they arrive and a failed
verification ends the command with an error (exit code 5). A binary
payload is not written to a terminal unless -o - asks for it.

With --continue (and -o FILE) the download goes to .FILE.<claim id>.partial
beside FILE, which is kept when the transfer breaks off. A connection that
breaks off (or a server briefly unavailable) is resumed by the command
itself: it asks the server only for the bytes after the partial file (a
Range request) and appends them, waiting 0.5 s, then twice as long each
time (at most 10 s), at most --retries attempts in a row that add no
byte; after that, running the same command again goes on from there.
Before the file is renamed to FILE, the whole of it is checked against
the reference's size and sha256; a partial file that does not match is
removed (exit code 5) and the next run starts afresh.`,
		Example: `  claimcheck get @ref.json -o payload.json
  claimcheck get --continue @ref.json -o big.tar    # again after a cut: resumes
  claimcheck put --ns tmp file | claimcheck get - > copy`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return g.run(cmd, env, args[0]) },
	}
	g.client.register(cmd, env)
	cmd.Flags().StringVarP(&g.out, "output", "o", "", "write the payload to this file (- for stdout, even a terminal)")
	cmd.Flags().BoolVar(&g.resume, "continue", false, "resume an interrupted download into -o FILE from its partial file, and verify the whole file")
	cmd.Flags().IntVar(&g.retries, "retries", 5, "with --continue: attempts in a row without progress after a broken connection (0: none)")
	return cmd
}

func (g *getCmd) run(cmd *cobra.Command, env Env, arg string) error {
	if g.retries < 0 {
		return usageError{fmt.Errorf("--retries: must not be negative, got %d", g.retries)}
	}
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
	defer func() { _ = p.Close() }()
	src, finish := withProgress(env.Stderr, p, p.Ref.Size, "get")
	defer finish()
	switch g.out {
	case "-":
		_, err := io.Copy(env.Stdout, src)
		return err
	case "":
		if env.isTerminal(env.Stdout) {
			if src, err = refuseBinaryOnTerminal(src); err != nil {
				return err
			}
		}
		_, err := io.Copy(env.Stdout, src)
		return err
	}
	return writeOutput(g.out, src)
}
