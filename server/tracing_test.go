package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/tracingtest"
	"github.com/claimcheck/claimcheck/server"
)

// A producer's trace continues through the Go client, the server's
// request span (named by its route) and the engine's spans; a consumer's
// redeem, in a trace of its own, links back to the put.
func TestTracingAcrossTheServer(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	// The application's OpenTelemetry set-up, which the client uses.
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })

	ctx := context.Background()
	store := enginetest.Open(t, engine.Config{TracerProvider: tp})
	srv := httptest.NewServer(server.New(server.Config{Claims: store, TracerProvider: tp}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	tracer := tp.Tracer("test")
	pctx, producer := tracer.Start(ctx, "producer")
	ref, err := c.Put(pctx, "orders", bytes.NewReader(bytes.Repeat([]byte("x"), 1024)), claimcheck.PutOptions{})
	producer.End()
	if err != nil {
		t.Fatal(err)
	}
	spans := tracingtest.Spans(exp.GetSpans())
	exp.Reset()
	req := spans.Named(t, "PUT /v1/namespaces/{ns}/claims")
	root := spans.Named(t, "producer")
	if req.Parent.SpanID() != root.SpanContext.SpanID() || req.Parent.TraceID() != root.SpanContext.TraceID() {
		t.Fatalf("the request's span is not the producer's child: parent %v", req.Parent)
	}
	tracingtest.WantAttr(t, req, "http.route", "/v1/namespaces/{ns}/claims")
	tracingtest.WantAttr(t, req, "http.request.method", "PUT")
	tracingtest.WantAttr(t, req, "http.response.status_code", int64(201))
	put := spans.Named(t, "claimcheck.put")
	if put.Parent.SpanID() != req.SpanContext.SpanID() {
		t.Fatal("the engine's put span is not the request's child")
	}

	cctx, consumer := tracer.Start(ctx, "consumer")
	p, err := c.Redeem(cctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, p); err != nil {
		t.Fatal(err)
	}
	p.Close()
	consumer.End()
	spans = tracingtest.Spans(exp.GetSpans())
	get := spans.Named(t, "GET /v1/claims/{id}")
	if get.SpanContext.TraceID() != spans.Named(t, "consumer").SpanContext.TraceID() {
		t.Fatal("the redeem's request is not in the consumer's trace")
	}
	redeem := spans.Named(t, "claimcheck.redeem")
	if len(redeem.Links) != 1 || !tracingtest.Linked(redeem, put) {
		t.Fatalf("redeem links %v, want the put %v", redeem.Links, put.SpanContext)
	}
}
