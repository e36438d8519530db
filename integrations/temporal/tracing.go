package temporal

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Tracing (ADR 0250). The Keeper's passes are traces of their own,
// started through the application's global tracer provider. Payloads a
// worker offloads or resolves are traced by the claimcheck client and
// server: the client sends the trace context of the context it is
// given, and the Temporal SDK's OpenTelemetry interceptor
// (go.temporal.io/sdk/contrib/opentelemetry, in client.Options.Interceptors)
// makes that the workflow's or activity's span, carried from the
// starter through Temporal's headers. See the README's "Tracing".

// tracerName is the instrumentation scope of the integration's spans.
const tracerName = "github.com/claimcheck/claimcheck/integrations/temporal"

// endKeeperPass ends the span of a Keeper pass with what it did.
func endKeeperPass(span trace.Span, r KeeperReport, err error) {
	if span.IsRecording() {
		span.SetAttributes(
			attribute.Int("claimcheck.claims", r.Claims),
			attribute.Int("claimcheck.temporal.runs", r.Runs),
			attribute.Int("claimcheck.temporal.open", r.Open),
			attribute.Int("claimcheck.extended", r.Extended),
			attribute.Int("claimcheck.errors", r.Errors))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
