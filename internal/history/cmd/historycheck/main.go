// Command historycheck checks a history of client operations that
// internal/history's Recorder wrote, prints the report and exits 1 when
// it found a violation (2 when the history cannot be read):
//
//	go run ./internal/history/cmd/historycheck [-skew 2s] FILE
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/claimcheck/claimcheck/internal/history"
)

func main() {
	skew := flag.Duration("skew", 2*time.Second, "allowance around every deadline for the clocks' distance")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: historycheck [-skew 2s] FILE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	evs, err := history.Read(f)
	_ = f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", flag.Arg(0), err)
		os.Exit(2)
	}
	rep := history.Check(evs, history.Options{Skew: *skew})
	fmt.Print(rep)
	if !rep.OK() {
		os.Exit(1)
	}
}
