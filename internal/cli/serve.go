package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/config"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/console"
)

// The server serves the embedded store.
var _ server.Store = (*engine.Store)(nil)

// DefaultListen is where serve listens without --listen or a config.
const DefaultListen = "127.0.0.1:8080"

// fileConfig is the whole YAML file: the store's config plus the
// server's own settings.
type fileConfig struct {
	engine.Config `yaml:",inline"`
	// Listen is the address to serve on (default 127.0.0.1:8080).
	Listen string `yaml:"listen"`
	// Auth requires API keys on every /v1 route (serve --auth; ADR 0060).
	Auth bool `yaml:"auth"`
	// HTTP holds the server's limits and TLS files (serve_http.go). Not
	// "server": CLAIMCHECK_SERVER is the client's server URL.
	HTTP httpConfig `yaml:"http"`
	// Metrics says where /metrics is served (serve_metrics.go, ADR 0271).
	Metrics metricsConfig `yaml:"metrics"`
	// Console is the operator console at /console/ (server/console,
	// ADR 0282).
	Console consoleConfig `yaml:"console"`
}

// consoleConfig is the config file's console section.
//
//	console:
//	  disabled: true   # /console/ answers 404, as any unknown path
type consoleConfig struct {
	// Disabled leaves the console out: its paths are the API's, which
	// does not serve them.
	Disabled bool `yaml:"disabled"`
}

// storeFlags locate the store: a config file and the data directory.
// serve uses them, and so will the operator commands that work on the
// store directly (fsck, gc, sweep).
type storeFlags struct {
	config string
	data   string
}

func (f *storeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", "", "YAML config file (every key: docs/CONFIGURATION.md)")
	cmd.Flags().StringVar(&f.data, "data", "", "data directory of the embedded defaults (default ./data)")
}

// load reads the config file and environment overrides, then applies the
// flags, which win over both.
func (f *storeFlags) load(env Env) (fileConfig, error) {
	var fc fileConfig
	if err := config.Load(f.config, env.Environ(), &fc); err != nil {
		return fc, err
	}
	if f.data != "" {
		fc.Data = f.data
	}
	// Named to a tenant that tries to change a configured subscription.
	fc.ConfigFile = f.config
	if err := fc.validate(); err != nil {
		if f.config != "" {
			return fc, fmt.Errorf("config %s: %w", f.config, err)
		}
		return fc, fmt.Errorf("config: %w", err)
	}
	return fc, nil
}

// openOffline opens the store for an operator command: the same config
// and data as serve, with the background sweeper off (the command does
// the work itself, once) and no delivery to subscriptions (the servers
// deliver).
func (f *storeFlags) openOffline(ctx context.Context, env Env) (*engine.Store, error) {
	fc, err := f.load(env)
	if err != nil {
		return nil, err
	}
	cfg := fc.Config
	cfg.Sweeper.Disabled = true
	cfg.Subscriptions.Disabled = true
	cfg.Sweeper.WriteStall = fc.writeStall()
	return engine.Open(ctx, cfg)
}

// writeStall is the longest a put in progress goes without writing: the
// server's read timeout on request bodies, which the backstop, gc and
// fsck of the same config file use to tell a temp file of a dead write
// from one in progress (sweep.Config.WriteStall). With the read timeout
// off, the backstop's grace period bounds it.
func (fc fileConfig) writeStall() time.Duration {
	if d := time.Duration(fc.HTTP.Limits.WithDefaults().ReadTimeout); d > 0 {
		return d
	}
	return fc.Sweeper.WithDefaults().BackstopGrace
}

type serveCmd struct {
	store  storeFlags
	listen string
	http   httpFlags
}

func newServeCmd(env Env) *cobra.Command {
	s := &serveCmd{}
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--data DIR] [--listen ADDR]",
		Short: "Run the claimcheck server (embedded defaults: ./data on 127.0.0.1:8080)",
		Long: `Run the HTTP server. With no flags it keeps SQLite metadata and blob files
under ./data and listens on 127.0.0.1:8080. Flags override the config file,
which the CLAIMCHECK_* environment variables override in turn.

It stops gracefully on SIGINT or SIGTERM: in-flight requests may finish.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return s.run(cmd, env) },
	}
	s.store.register(cmd)
	cmd.Flags().StringVar(&s.listen, "listen", "", "address to listen on (default "+DefaultListen+")")
	s.http.register(cmd)
	return cmd
}

func (s *serveCmd) run(cmd *cobra.Command, env Env) error {
	ctx := cmd.Context()
	fc, err := s.store.load(env)
	if err != nil {
		return err
	}
	if s.listen != "" {
		fc.Listen = s.listen
	}
	if fc.Listen == "" {
		fc.Listen = DefaultListen
	}
	s.http.apply(&fc)
	limits, tlsConf, err := fc.HTTP.load(fc.Auth)
	if err != nil {
		return err
	}
	// Tracing first: the exporter must be up before the first span, and
	// the logger carries trace ids only when it is on.
	tp, err := tracing.Setup(ctx, fc.Tracing, env.Getenv)
	if err != nil {
		return err
	}
	var logHandler slog.Handler = slog.NewTextHandler(env.Stderr, nil)
	if tp.TracerProvider != nil {
		logHandler = tracing.LogHandler(logHandler)
	}
	logger := slog.New(logHandler)
	defer func() {
		// What is still buffered is exported before the process ends,
		// bounded: a collector that is gone does not hold the exit.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			logger.Warn("tracing: exporting the last spans failed", "err", err)
		}
	}()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg := fc.Config
	cfg.Logger = logger
	// The bucket's CORS rules must cover the pages the server lets in
	// (internal/bucketsetup/cors.go); load has validated them.
	cfg.BrowserOrigins, _ = limits.CORS.NormalOrigins()
	cfg.Registerer = reg
	cfg.TracerProvider = tp.TracerProvider
	cfg.Sweeper.WriteStall = fc.writeStall()
	store, err := engine.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()

	ln, err := net.Listen("tcp", fc.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", fc.Listen, err)
	}
	cfg = cfg.WithDefaults()
	scheme := "http://"
	if tlsConf != nil {
		scheme = "https://"
	}
	logger.Info("claimcheck serving", "url", scheme+ln.Addr().String(), "metadata", engine.RedactURL(cfg.Metadata), "storage", engine.RedactURL(cfg.Storage), "auth", fc.Auth, "tls", tlsConf != nil, "public_url", limits.PublicURL)
	scfg := server.Config{
		Claims: store, Ready: store.Ready, Registerer: reg, Logger: logger, Limits: limits,
		TracerProvider: tp.TracerProvider,
	}
	if fc.Metrics.onAPIPort(fc.Auth) {
		scfg.Gatherer = reg
	} else if fc.Metrics.Listen == "" {
		logger.Info("metrics: auth is on, so the API port does not serve /metrics; set metrics.listen to scrape them (docs/OPERATIONS.md)")
	}
	if err := secureServer(ctx, &scfg, store, fc.Auth, ln.Addr(), env.Stderr, logger); err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	waitMetrics, err := fc.Metrics.serve(sctx, reg, logger)
	if err != nil {
		return err
	}
	var h http.Handler = server.New(scfg)
	if !fc.Console.Disabled {
		h = console.Mount(h)
	}
	err = server.ServeWith(sctx, ln, h, logger, server.Options{Limits: limits, TLS: tlsConf})
	stop()
	return errors.Join(err, waitMetrics())
}
