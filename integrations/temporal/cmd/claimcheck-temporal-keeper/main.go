// Command claimcheck-temporal-keeper runs the Temporal keeper on its own:
// every interval it lists the claims of its claimcheck namespaces that
// expire soon, asks Temporal about the runs that own them, and extends
// the claims of open runs (and of closed runs, until close + the
// namespace's retention + a margin). It never deletes. Several may run at
// once (extensions are idempotent); see integrations/temporal/README.md.
//
//	claimcheck-temporal-keeper --server http://127.0.0.1:8080 \
//	    --temporal 127.0.0.1:7233 --ns temporal --interval 5m \
//	    --metrics 127.0.0.1:9465
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
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	tclient "go.temporal.io/sdk/client"

	"github.com/claimcheck/claimcheck/client"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
)

func main() {
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "claimcheck-temporal-keeper:", err)
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
	fs := flag.NewFlagSet("claimcheck-temporal-keeper", flag.ContinueOnError)
	serverURL := fs.String("server", envOr("CLAIMCHECK_SERVER", "http://127.0.0.1:8080"), "claimcheck server URL (default $CLAIMCHECK_SERVER)")
	apiKey := fs.String("api-key", os.Getenv("CLAIMCHECK_API_KEY"), "producer or admin API key of the namespaces' tenant (default $CLAIMCHECK_API_KEY)")
	temporalAddr := fs.String("temporal", envOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port (default $TEMPORAL_ADDRESS)")
	nss := fs.String("ns", cctemporal.DefaultNamespace, "claimcheck namespaces to keep, comma-separated")
	interval := fs.Duration("interval", 5*time.Minute, "time between passes")
	rps := fs.Float64("rate", 50, "calls per second to Temporal and claimcheck together, at most")
	metrics := fs.String("metrics", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9465); empty: none")
	once := fs.Bool("once", false, "run one pass and exit")
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
	tc, err := tclient.Dial(tclient.Options{HostPort: *temporalAddr})
	if err != nil {
		return fmt.Errorf("--temporal %s: %w", *temporalAddr, err)
	}
	defer tc.Close()
	reg := prometheus.NewRegistry()
	k, err := cctemporal.NewKeeper(cl, tc.WorkflowService(), cctemporal.KeeperOptions{
		Namespaces: strings.Split(*nss, ","), Interval: *interval, CallsPerSecond: *rps, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *once {
		_, err := k.RunOnce(ctx)
		return err
	}
	if *metrics != "" {
		srv := &http.Server{Addr: *metrics, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				slog.Error("metrics server", "err", err)
				stop()
			}
		}()
		defer func() { _ = srv.Close() }()
	}
	return k.Run(ctx)
}
