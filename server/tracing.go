package server

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/internal/tracing"
)

// tracedHandler returns h inside a server span per request, from otelhttp: the
// HTTP semantic conventions' attributes (method, route, status, sizes),
// the W3C traceparent, tracestate and baggage of the request extracted
// as its parent, the span named by s.spanName. nil when tp is nil:
// tracing off adds no handler.
func (s *Server) tracedHandler(tp trace.TracerProvider, h http.Handler) http.Handler {
	if tp == nil {
		return nil
	}
	return otelhttp.NewHandler(h, "claimcheck",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(tracing.Propagator()),
		otelhttp.WithSpanNameFormatter(s.spanName),
		// Probes and scrapes are not what a trace is for.
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return false
			}
			return true
		}))
}

// nameSpan names the request's span by its route (spanName) and puts
// http.route, the route template the mux matched, and the status sent on
// it, once they are known. otelhttp reads the route only before the
// request is routed, and names the span again and records the status
// only when the handler returns: a redeem that aborts its connection
// part-way (claims.go) panics instead, and its span would end named by
// the method alone, without its status.
func (s *Server) nameSpan(r *http.Request, rec *recorder) {
	sp := trace.SpanFromContext(r.Context())
	if !sp.IsRecording() {
		return
	}
	sp.SetName(s.spanName("", r))
	if route := s.routeTemplate(r); route != "" {
		sp.SetAttributes(semconv.HTTPRoute(route))
	}
	if rec.status != 0 {
		sp.SetAttributes(semconv.HTTPResponseStatusCode(rec.status))
	}
}

// failSpan marks the request's span as failed with err: a redeem whose
// payload fails verification after its status and headers were sent
// (claims.go). The span keeps the status code that was sent (200, 206),
// which alone would read as a success; the span's status is Error, with
// err as an exception event.
func failSpan(r *http.Request, err error) {
	sp := trace.SpanFromContext(r.Context())
	if !sp.IsRecording() {
		return
	}
	sp.RecordError(err)
	sp.SetStatus(codes.Error, err.Error())
}

// routeTemplate is the path template of the route r matched: its mux
// pattern without the method; for a CORS preflight, which the mux never
// sees, that of the route the preflight asks about (its
// Access-Control-Request-Method on its path). Empty when no route
// matched.
func (s *Server) routeTemplate(r *http.Request) string {
	pattern := r.Pattern
	if pattern == preflightRoute {
		probe := *r
		probe.Method = r.Header.Get("Access-Control-Request-Method")
		_, pattern = s.mux.Handler(&probe)
	}
	if _, rest, ok := strings.Cut(pattern, " "); ok {
		return rest
	}
	return pattern
}

// spanName names a request's span by its method and route template
// ("PUT /v1/namespaces/{ns}/claims", "OPTIONS /v1/claims/{id}" for a
// preflight), as the HTTP semantic conventions ask, so that span names
// stay few whatever the ids; a request no route matched (a 404 or 405
// no_route) is named by its method alone, for the same reason: its path
// is no name. otelhttp names the span again once the mux has matched the
// route (r.Pattern), and so does nameSpan.
func (s *Server) spanName(_ string, r *http.Request) string {
	if route := s.routeTemplate(r); route != "" {
		return r.Method + " " + route
	}
	return r.Method
}
