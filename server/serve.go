package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
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

// Serve answers HTTP requests on ln with h until ctx is done, then shuts
// down gracefully: it stops accepting connections and gives in-flight
// requests up to ShutdownTimeout to finish, then closes the rest. It
// returns nil after a clean shutdown and an error if serving failed or
// in-flight requests had to be cut off. Serve closes ln.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// Request contexts deliberately do not derive from ctx: a
		// cancelled ctx starts the graceful shutdown, it must not abort
		// the requests that shutdown waits for.
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

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
		srv.Close()
		err = fmt.Errorf("shutdown: in-flight requests cut off after %s: %w", ShutdownTimeout, err)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
