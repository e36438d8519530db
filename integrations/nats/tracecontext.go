package nats

import (
	"context"

	natsgo "github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// A message carries the trace context of its publisher in its headers
// (W3C traceparent, tracestate, baggage), through the application's
// global OpenTelemetry propagator: the consumer's redeem continues the
// publisher's trace. Without OpenTelemetry set up, the propagator adds
// and reads nothing. A header already on the message is left as it is.

// headers is a propagation.TextMapCarrier over a message's headers; its
// keys are as the propagator writes them (lower case), not
// canonicalised.
type headers natsgo.Header

func (h headers) Get(key string) string { return natsgo.Header(h).Get(key) }
func (h headers) Set(key, value string) { natsgo.Header(h).Set(key, value) }
func (h headers) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

var _ propagation.TextMapCarrier = headers{}

// traceHeaders are the trace headers of ctx, nil when there are none.
func traceHeaders(ctx context.Context) propagation.MapCarrier {
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	return c
}

// addTraceHeaders adds the headers of th that h lacks.
func addTraceHeaders(h natsgo.Header, th propagation.MapCarrier) {
	for k, v := range th {
		if h.Get(k) == "" {
			h.Set(k, v)
		}
	}
}

// withTraceContext returns msg with the trace headers th that it lacks
// added: msg itself when there are none to add, else a copy (the
// caller's message is not modified).
func withTraceContext(msg *natsgo.Msg, th propagation.MapCarrier) *natsgo.Msg {
	if len(th) == 0 {
		return msg
	}
	cp := &natsgo.Msg{Subject: msg.Subject, Reply: msg.Reply, Data: msg.Data, Header: natsgo.Header{}}
	for k, vs := range msg.Header {
		cp.Header[k] = append([]string(nil), vs...)
	}
	addTraceHeaders(cp.Header, th)
	return cp
}

// contextOf is ctx with the trace context h carries.
func contextOf(ctx context.Context, h natsgo.Header) context.Context {
	if h == nil {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, headers(h))
}
