package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/claimcheck/claimcheck"
)

const (
	// ShutdownTimeout is how long Serve lets in-flight requests finish
	// after its context is done, before it closes their connections.
	ShutdownTimeout = 30 * time.Second
	// readHeaderTimeout bounds how long a client may take to send the
	// request headers (slowloris). Bodies have no deadline: payloads are
	// large and may legitimately take minutes.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes keep-alive connections nobody uses.
	idleTimeout = 2 * time.Minute
)

// Options tune ServeWith.
type Options struct {
	// Limits supplies the connection-level limits: MaxHeaderBytes,
	// ReadHeaderTimeout and IdleTimeout (zero: Serve's defaults), and
	// MaxConnsPerAddr (zero: no bound; TrustedProxies are exempt). The
	// per-request ones belong to the handler (Config.Limits).
	Limits Limits
	// TLS, when set, makes the server speak HTTPS (HTTP/2 and HTTP/1.1)
	// with its certificates.
	TLS *tls.Config
}

// The server sets no ReadTimeout or WriteTimeout: they would bound whole
// payload streams. The handler renews per-read and per-write deadlines
// instead (limits.go).

// Serve is ServeWith with the default options: plain HTTP, a
// ReadHeaderTimeout of 10s and an IdleTimeout of 2m.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	return ServeWith(ctx, ln, h, logger, Options{})
}

// ServeWith answers HTTP requests on ln with h until ctx is done, then shuts
// down gracefully: it stops accepting connections and gives in-flight
// requests up to ShutdownTimeout to finish, then closes the rest. It
// returns nil after a clean shutdown and an error if serving failed or
// in-flight requests had to be cut off. Serve closes ln.
func ServeWith(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger, opts Options) error {
	if logger == nil {
		logger = slog.Default()
	}
	orDefault := func(v claimcheck.Duration, d time.Duration) time.Duration {
		if v > 0 {
			return time.Duration(v)
		}
		return d
	}
	if n := opts.Limits.MaxConnsPerAddr; n > 0 {
		// Bad trusted_proxies entries are Limits.Validate's to report;
		// here they exempt nothing.
		trusted, _ := opts.Limits.trustedPrefixes()
		ln = newLimitListener(ln, n, trusted, logger)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: orDefault(opts.Limits.ReadHeaderTimeout, readHeaderTimeout),
		IdleTimeout:       orDefault(opts.Limits.IdleTimeout, idleTimeout),
		MaxHeaderBytes:    int(opts.Limits.MaxHeaderBytes), // 0: net/http's 1 MiB
		TLSConfig:         opts.TLS,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// Request contexts deliberately do not derive from ctx: a
		// cancelled ctx starts the graceful shutdown, it must not abort
		// the requests that shutdown waits for.
	}
	// Open event streams end at once when the shutdown begins, telling
	// their clients to reconnect (endStream), instead of holding the
	// shutdown for ShutdownTimeout and being cut off (ADR 0273).
	shutdown := make(chan struct{})
	srv.BaseContext = func(net.Listener) context.Context {
		return context.WithValue(context.Background(), shutdownKey{}, shutdown)
	}
	srv.RegisterOnShutdown(func() { close(shutdown) })
	served := make(chan error, 1)
	go func() {
		if opts.TLS != nil {
			served <- srv.ServeTLS(ln, "", "")
			return
		}
		served <- srv.Serve(ln)
	}()

	select {
	case err := <-served:
		// Serve only returns early on a listener failure.
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: waiting for in-flight requests", "timeout", ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close() // the shutdown's error is the one to report
		err = fmt.Errorf("shutdown: in-flight requests cut off after %s: %w", ShutdownTimeout, err)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
