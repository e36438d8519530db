package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/claimcheck/claimcheck/server"
)

// metricsConfig is the config file's metrics section: where Prometheus
// scrapes (ADR 0271).
//
//	metrics:
//	  listen: 0.0.0.0:9090   # /metrics here, without a key; never on the API port
//
// /metrics carries no key: Prometheus scrapes without one. Its samples
// name namespaces, tenants and subscriptions, so with auth on the API
// port does not serve it; metrics.listen puts it on an address of its
// own, which the network (a NetworkPolicy, a firewall) keeps to the
// scrapers. With auth off and no metrics.listen, the API port serves it
// as before.
type metricsConfig struct {
	// Listen is the address of the metrics listener (host:port). Empty:
	// /metrics on the API port when auth is off, nowhere when it is on.
	Listen string `yaml:"listen"`
}

// onAPIPort reports whether the API port serves /metrics.
func (m metricsConfig) onAPIPort(authOn bool) bool { return m.Listen == "" && !authOn }

// serveMetrics listens on metrics.listen and serves /metrics from g
// until ctx ends; nil and a nil wait when metrics.listen is unset. The
// returned wait gives the listener's end. The listener is bound before
// serve starts the API, so a taken port fails the start.
func (m metricsConfig) serve(ctx context.Context, g prometheus.Gatherer, logger *slog.Logger) (wait func() error, err error) {
	if m.Listen == "" {
		return func() error { return nil }, nil
	}
	ln, err := net.Listen("tcp", m.Listen)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w", m.Listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	logger.Info("metrics serving", "url", "http://"+ln.Addr().String()+"/metrics")
	done := make(chan error, 1)
	go func() { done <- server.ServeWith(ctx, ln, mux, logger, server.Options{}) }()
	return func() error { return <-done }, nil
}
