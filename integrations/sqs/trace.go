package sqs

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// Trace context travels in message attributes (W3C traceparent and
// tracestate, or whatever the global propagator writes), through
// otel.GetTextMapPropagator(): an application that sets one up gets the
// consumer's handler context in the publisher's trace; without one
// (the default, a no-op propagator) nothing is added. Attributes are
// only added while the message stays within MaxAttributes: a message
// that already has all of them is sent without its trace context rather
// than refused.

// traceFields returns the propagator's fields for ctx.
func traceFields(ctx context.Context) propagation.MapCarrier {
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, c)
	return c
}

// traceContext extracts the trace context carried in the string
// attributes get returns.
func traceContext(ctx context.Context, get func(name string) (string, bool)) context.Context {
	prop := otel.GetTextMapPropagator()
	c := propagation.MapCarrier{}
	for _, f := range prop.Fields() {
		if v, ok := get(f); ok {
			c[f] = v
		}
	}
	if len(c) == 0 {
		return ctx
	}
	return prop.Extract(ctx, c)
}
