// Command historycheck checks a history of client operations that
// internal/history's Recorder wrote, prints the report and exits 1 when
// it found a violation (2 when the history cannot be read):
//
//	go run ./internal/history/cmd/historycheck [-skew 2s] [-backstop-bound D] FILE
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/claimcheck/claimcheck/internal/history"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command with its arguments, returning the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("historycheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	skew := fs.Duration("skew", 2*time.Second, "allowance around every deadline for the clocks' distance")
	bound := fs.Duration("backstop-bound", 0, "how long an object of a finished claim may wait for its collection (0: not checked)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		_, _ = fmt.Fprintln(stderr, "usage: historycheck [-skew 2s] [-backstop-bound D] FILE")
		return 2
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		_, _ = fmt.Fprintln(stderr, err)
		return 2
	}
	evs, err := history.Read(f)
	_ = f.Close()
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", fs.Arg(0), err)
		return 2
	}
	rep := history.Check(evs, history.Options{Skew: *skew, BackstopBound: *bound})
	_, _ = fmt.Fprint(stdout, rep)
	if !rep.OK() {
		return 1
	}
	return 0
}
