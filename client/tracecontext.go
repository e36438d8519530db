package client

import (
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// propagate puts the trace context and baggage of the request's context
// on its headers (W3C traceparent, tracestate, baggage), through the
// application's global propagator: with OpenTelemetry set up
// (otel.SetTextMapPropagator), the server's spans join the caller's
// trace; without it, the global propagator injects nothing. The client
// starts no spans of its own: an application that wants a client span
// per request wraps its transport (WithHTTPClient) with otelhttp.
func propagate(req *http.Request) {
	otel.GetTextMapPropagator().Inject(req.Context(), propagation.HeaderCarrier(req.Header))
}
