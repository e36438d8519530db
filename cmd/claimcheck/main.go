// Command claimcheck is the claimcheck server and its command-line client.
// Everything lives in internal/cli; this file only hands over the
// arguments and the process's streams.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/claimcheck/claimcheck/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Environ: os.Environ})
	stop()
	os.Exit(code)
}
