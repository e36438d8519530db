package nats

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// The publisher's trace context rides in the message's headers, offloaded
// or inline, and the consumer's handler (and its redeem) continue it.
func TestTraceContextCrossesTheBus(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	tp := sdktrace.NewTracerProvider()
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks})
	ctx, span := tp.Tracer("test").Start(e.ctx, "publish")
	defer span.End()
	for _, b := range [][]byte{brokertest.Body(64 << 10), brokertest.Body(threshold - 1)} {
		if _, err := pub.Publish(ctx, "orders.created", b); err != nil {
			t.Fatal(err)
		}
	}
	for seq := uint64(1); seq <= 2; seq++ {
		raw, err := e.stream.GetMsg(e.ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if got := trace.SpanContextFromContext(contextOf(context.Background(), raw.Header)); got.TraceID() != span.SpanContext().TraceID() {
			t.Fatalf("message %d carries trace %v, want the publisher's %v (headers %v)", seq, got.TraceID(), span.SpanContext().TraceID(), raw.Header)
		}
	}

	got := make(chan trace.SpanContext, 2)
	c := e.consumer(t, e.durable(t, "billing"), func(ctx context.Context, _ *Message) error {
		got <- trace.SpanContextFromContext(ctx)
		return nil
	}, ConsumerConfig{})
	cc, err := c.Consume(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if sc := <-got; sc.TraceID() != span.SpanContext().TraceID() || !sc.IsRemote() {
			t.Fatalf("the handler's context has trace %v, want the publisher's %v", sc.TraceID(), span.SpanContext().TraceID())
		}
	}
	cc.Drain()
	<-cc.Closed()
}
