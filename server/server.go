// Package server is claimcheck's HTTP API: it puts a Store (the
// contract's Claims, Uploads and Admin, and what the server needs of the
// embedded *engine.Store besides) on the wire for package client and for
// any HTTP tool.
//
// The wire contract (routes, headers, error codes) lives in package
// server/api, shared with the client, and is described in docs/HTTP.md.
// This package adds what only a server needs: the handlers, the one
// function that writes errors, health and readiness probes, its own
// request metrics, and Serve with graceful shutdown.
//
// Payloads are streamed in both directions and never held in memory
// whole. A payload response carries no Content-Length: it is chunked with
// a declared Claimcheck-Error trailer, so that a failure detected part-way
// (the store's verifying reader finds the stored object corrupt) reaches
// the client as an error rather than as a silently short or altered body.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tus/tusd/v2/pkg/handler"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/auth"
)

// Config configures a Server. Only Claims is required.
type Config struct {
	// Claims is the store the API serves: the embedded *engine.Store,
	// or anything that implements Store.
	Claims Store
	// Ready backs /readyz; nil means always ready. It should be cheap
	// (a database ping): load balancers call it often.
	Ready func(ctx context.Context) error
	// Gatherer is exposed on /metrics; nil means no /metrics route.
	Gatherer prometheus.Gatherer
	// Registerer receives the server's own HTTP metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger receives errors the client is not told about (internal
	// errors, corrupt objects, failed streams); nil means slog.Default().
	Logger *slog.Logger
	// Auth, when set, requires an API key on every /v1 route and limits
	// each key to its tenant, role and namespace (auth.go, ADR 0060).
	// ClaimNamespace must then be set too: *engine.Store's.
	Auth           *auth.Service
	ClaimNamespace func(ctx context.Context, id string) (string, error)
	// Limits bound each client (limits.go); zero fields: no limit.
	Limits Limits
	// TracerProvider, when set, gives every request a server span
	// (OpenTelemetry's HTTP semantic conventions, named by the method and
	// the route's template), a child of the caller's span when the
	// request carries a W3C traceparent (tracing.go). Nil: no tracing.
	TracerProvider trace.TracerProvider
}

// readyTimeout bounds one readiness check, so that a hung database makes
// /readyz fail instead of hang.
const readyTimeout = 5 * time.Second

// Server is the HTTP API. It implements http.Handler.
type Server struct {
	claims   Store
	ready    func(ctx context.Context) error
	log      *slog.Logger
	mux      *http.ServeMux
	metrics  *metrics     // nil: no metrics
	gathered http.Handler // /metrics; nil: no such route

	auth           *auth.Service // nil: auth off
	claimNamespace func(ctx context.Context, id string) (string, error)
	limits         Limits
	rate           *limiters // per key (or address); nil: no rate limit
	authFailures   *limiters // per address, failed authentications only
	streams        *streams
	eventStreams   *streams                 // live event streams per tenant (eventstreams.go)
	pending        *pendingBytes            // per client; nil: no bound (pending.go)
	trusted        []netip.Prefix           // reverse proxies (Limits.TrustedProxies)
	public         *url.URL                 // Limits.PublicURL; nil: from the request (proxy.go)
	browser        *browserGate             // CORS and cross-origin protection (cors.go)
	tus            *handler.UnroutedHandler // resumable uploads (tus.go)
	traced         http.Handler             // serve inside a request's span; nil: no tracing (tracing.go)
	nsCache        claimNamespaces
}

// New returns the API handler for cfg. It panics if cfg.Claims is nil or
// if cfg.Registerer already holds different metrics of the same names:
// both are programming errors.
func New(cfg Config) *Server {
	if cfg.Claims == nil {
		panic("server: Config.Claims is nil")
	}
	if cfg.Auth != nil && cfg.ClaimNamespace == nil {
		panic("server: Config.Auth is set without Config.ClaimNamespace")
	}
	s := &Server{claims: cfg.Claims, ready: cfg.Ready, log: cfg.Logger, mux: http.NewServeMux(),
		auth: cfg.Auth, claimNamespace: cfg.ClaimNamespace, limits: cfg.Limits,
		rate:         newLimiters(cfg.Limits.RateLimit, cfg.Limits.RateBurst),
		streams:      &streams{max: cfg.Limits.MaxStreamsPerKey, n: map[string]int{}},
		eventStreams: &streams{max: cfg.Limits.MaxEventStreamsPerTenant, n: map[string]int{}},
		pending:      newPendingBytes(int64(cfg.Limits.MaxPendingBytesPerKey))}
	// Bad entries are Limits.Validate's to report; here they trust
	// nothing, and a bad public URL is not used.
	s.trusted, _ = cfg.Limits.trustedPrefixes()
	s.public, _ = cfg.Limits.publicURL()
	s.browser = newBrowserGate(cfg.Limits.CORS)
	if s.auth != nil {
		s.authFailures = newLimiters(authFailureRate, authFailureBurst)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if cfg.Registerer != nil {
		s.metrics = newMetrics(cfg.Registerer)
	}
	if cfg.Gatherer != nil {
		s.gathered = promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{
			ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelError),
			ErrorHandling: promhttp.ContinueOnError,
		})
	}
	s.tus = s.newTus()
	s.register() // the route table, routes.go
	s.traced = s.tracedHandler(cfg.TracerProvider, http.HandlerFunc(s.serve))
	return s
}

// ServeHTTP routes the request. Every request is counted by route (the
// mux pattern, so the label set stays bounded) and status, and requests
// that match no route get a JSON error like every other error.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.traced != nil {
		s.traced.ServeHTTP(w, r)
		return
	}
	s.serve(w, r)
}

// serve is ServeHTTP inside the request's span, if any.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w, req: r, allowed: s.allowed}
	if s.traced != nil {
		// Deferred: a redeem that aborts its connection panics past
		// otelhttp's own naming and status (tracing.go).
		defer s.nameSpan(r, rec)
	}
	if s.metrics == nil {
		s.route(rec, r)
		return
	}
	s.metrics.inFlight.Inc()
	defer s.metrics.inFlight.Dec()
	start := time.Now()
	// Deferred: a redeem that fails after its headers aborts the
	// connection with a panic (claims.go) and is counted too.
	defer func() {
		// The mux stored the matched pattern in r.Pattern.
		s.metrics.observe(r.Pattern, rec.statusCode(), time.Since(start))
	}()
	s.route(rec, r)
}

// route answers the request: browsers' CORS and cross-origin checks
// first (cors.go), then the mux.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if s.gate(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			s.log.WarnContext(ctx, "not ready", "err", err)
			return notReadyError{err}
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ready\n")) // a prober that hung up has its answer
	return nil
}
