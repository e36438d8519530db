package server

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/internal/tracing"
)

// traced returns h inside a server span per request, from otelhttp: the
// HTTP semantic conventions' attributes (method, route, status, sizes),
// the W3C traceparent, tracestate and baggage of the request extracted
// as its parent. nil when tp is nil: tracing off adds no handler.
func traced(tp trace.TracerProvider, h http.Handler) http.Handler {
	if tp == nil {
		return nil
	}
	return otelhttp.NewHandler(h, "claimcheck",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(tracing.Propagator()),
		otelhttp.WithSpanNameFormatter(spanName),
		// Probes and scrapes are not what a trace is for.
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return false
			}
			return true
		}))
}

// setRoute puts http.route, the route template the mux matched, on the
// request's span, once it is known: otelhttp reads it only before the
// request is routed.
func setRoute(r *http.Request) {
	if r.Pattern == "" {
		return
	}
	if sp := trace.SpanFromContext(r.Context()); sp.IsRecording() {
		sp.SetAttributes(semconv.HTTPRoute(routeTemplate(r.Pattern)))
	}
}

// routeTemplate is a mux pattern without its method.
func routeTemplate(pattern string) string {
	if _, rest, ok := strings.Cut(pattern, " "); ok {
		return rest
	}
	return pattern
}

// spanName names a request's span by its method and route template
// ("PUT /v1/claims/{namespace}"), as the HTTP semantic conventions ask,
// so that span names stay few whatever the ids; a request no route
// matched is named by its method alone. otelhttp names the span again
// once the mux has matched the route (r.Pattern).
func spanName(_ string, r *http.Request) string {
	if r.Pattern == "" {
		return r.Method
	}
	return r.Method + " " + routeTemplate(r.Pattern)
}
