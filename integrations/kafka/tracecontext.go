package kafka

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// A record carries the trace context of its producer in its headers
// (W3C traceparent, tracestate, baggage), through the application's
// global OpenTelemetry propagator: the consumer's redeem continues the
// producer's trace. Without OpenTelemetry set up, the propagator adds
// and reads nothing. A header already on the record is left as it is.

// headers is a propagation.TextMapCarrier over a record's headers.
type headers struct{ h *[]kgo.RecordHeader }

func (c headers) Get(key string) string {
	for _, h := range *c.h {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func (c headers) Set(key, value string) {
	*c.h = append(slices.DeleteFunc(*c.h, func(h kgo.RecordHeader) bool { return h.Key == key }),
		kgo.RecordHeader{Key: key, Value: []byte(value)})
}

func (c headers) Keys() []string {
	keys := make([]string, 0, len(*c.h))
	for _, h := range *c.h {
		keys = append(keys, h.Key)
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

// withTraceContext returns r with the trace headers th that it lacks
// added: r itself when there are none to add, else a copy (the caller's
// record is not modified).
func withTraceContext(r *kgo.Record, th propagation.MapCarrier) *kgo.Record {
	if len(th) == 0 {
		return r
	}
	cp := *r
	cp.Headers = slices.Clone(r.Headers)
	addTraceHeaders(&cp.Headers, th)
	return &cp
}

// addTraceHeaders adds the headers of th that hs lacks.
func addTraceHeaders(hs *[]kgo.RecordHeader, th propagation.MapCarrier) {
	c := headers{hs}
	for k, v := range th {
		if c.Get(k) == "" {
			c.Set(k, v)
		}
	}
}

// contextOf is ctx with the trace context rec carries.
func contextOf(ctx context.Context, rec *kgo.Record) context.Context {
	hs := rec.Headers
	return otel.GetTextMapPropagator().Extract(ctx, headers{&hs})
}
