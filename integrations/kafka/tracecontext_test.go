package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// The producer's trace context rides in the records' headers, offloaded
// or inline (the caller's records untouched), and the handler (and its
// redeem) continue it.
func TestTraceContextCrossesTheBus(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	tp := sdktrace.NewTracerProvider()
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks})
	ctx, span := tp.Tracer("test").Start(e.ctx, "produce")
	defer span.End()
	large := &kgo.Record{Topic: topic, Key: []byte("large"), Value: brokertest.Body(64 << 10)}
	small := &kgo.Record{Topic: topic, Key: []byte("small"), Value: brokertest.Body(threshold - 1)}
	if err := pub.Publish(ctx, large, small); err != nil {
		t.Fatal(err)
	}
	if len(small.Headers) != 0 {
		t.Fatalf("the caller's record was modified: %v", small.Headers)
	}

	got := make(chan trace.SpanContext, 2)
	m := e.run(t, ConsumerConfig{Group: "traced"}, func(ctx context.Context, _ *Message) error {
		got <- trace.SpanContextFromContext(ctx)
		return nil
	})
	for range 2 {
		select {
		case sc := <-got:
			if sc.TraceID() != span.SpanContext().TraceID() || !sc.IsRemote() {
				t.Fatalf("the handler's context has trace %v, want the producer's %v", sc.TraceID(), span.SpanContext().TraceID())
			}
		case <-time.After(waitLong):
			t.Fatal("records not consumed")
		}
	}
	if err := m.stop(t); err != nil {
		t.Fatal(err)
	}
}
