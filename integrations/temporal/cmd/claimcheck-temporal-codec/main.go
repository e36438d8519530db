// Command claimcheck-temporal-codec serves a Temporal codec server
// (/encode, /decode, /download) backed by a running `claimcheck serve`, so
// the Temporal Web UI and CLI can show payloads that the claimcheck Codec
// or External Storage driver offloaded.
//
// It is a separate command, not a `claimcheck serve` flag, so that the
// core module never depends on the Temporal SDK; see
// docs/adr/0030-temporal-codec-server-command.md.
//
//	claimcheck-temporal-codec --server http://127.0.0.1:8080 \
//	    --listen 127.0.0.1:8089 --allow-origin http://localhost:8233
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/claimcheck/claimcheck/client"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "claimcheck-temporal-codec:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(args []string) error {
	fs := flag.NewFlagSet("claimcheck-temporal-codec", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8089", "address to listen on")
	serverURL := fs.String("server", envOr("CLAIMCHECK_SERVER", "http://127.0.0.1:8080"), "claimcheck server URL (default $CLAIMCHECK_SERVER)")
	apiKey := fs.String("api-key", os.Getenv("CLAIMCHECK_API_KEY"), "API key (default $CLAIMCHECK_API_KEY)")
	ns := fs.String("ns", cctemporal.DefaultNamespace, "claimcheck namespace /encode offloads to")
	origin := fs.String("allow-origin", "", "origin allowed to call from a browser (the Web UI's address)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var opts []client.Option
	if *apiKey != "" {
		opts = append(opts, client.WithAPIKey(*apiKey))
	}
	cl, err := client.New(*serverURL, opts...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := cctemporal.Options{Namespace: *ns}
	cd, err := cctemporal.NewCodec(ctx, cl, o)
	if err != nil {
		return err
	}
	d, err := cctemporal.NewDriver(ctx, cl, o)
	if err != nil {
		return err
	}
	h, err := cctemporal.NewCodecServerHandler(cctemporal.CodecServerOptions{
		Codecs: []converter.PayloadCodec{cd}, Driver: d, AllowOrigin: *origin,
	})
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	slog.Info("codec server listening", "addr", *listen, "claimcheck", *serverURL)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
