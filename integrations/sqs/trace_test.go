package sqs

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// TestTraceContext: with a W3C propagator set globally, the publisher's
// span context reaches the handler's context through a message attribute,
// for an inline and an offloaded body alike.
func TestTraceContext(t *testing.T) {
	t.Parallel()
	e := setup(t)
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })

	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(e.ctx, sc)
	url := e.queue(t, "trace", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})
	for _, b := range []string{brokertest.Text(10), brokertest.Text(4 << 10)} {
		if _, err := pub.Send(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []trace.SpanContext
	c := e.consumer(t, e.sqs, url, func(ctx context.Context, m *Message) error {
		if _, ok := m.Attributes["traceparent"]; !ok {
			t.Errorf("no traceparent attribute: %v", m.Attributes)
		}
		got = append(got, trace.SpanContextFromContext(ctx))
		return nil
	}, ConsumerConfig{MaxMessages: 1})
	pollUntil(t, c, 2)
	for _, g := range got {
		if g.TraceID() != sc.TraceID() || g.SpanID() != sc.SpanID() || !g.IsRemote() {
			t.Fatalf("handler's span context %v, want %v (remote)", g, sc)
		}
	}
}
