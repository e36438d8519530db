package temporal_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/claimcheck/claimcheck/engine"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/tracingtest"
)

// CountPhotos is a workflow whose input is large: the starter offloads
// it.
func CountPhotos(ctx workflow.Context, photos []Photo) (int, error) { return len(photos), nil }

// TestOffloadedInputInWorkflowTrace wires the SDK's OpenTelemetry
// interceptor as the README's "Tracing" says and checks, with the SDK's
// in-memory exporter, that the put of a workflow's offloaded input is a
// span of the trace the starter began, under the interceptor's
// StartWorkflow span, with the store's metadata and object storage spans
// under it. (Payloads a worker offloads, such as activity results, are
// stored by the SDK with the worker's own context, not the activity's,
// so their puts are traces of their own: the README says so.)
func TestOffloadedInputInWorkflowTrace(t *testing.T) {
	ts := temporalServer(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	// The same tracer provider for the store and the interceptor, as one
	// process set up with a global one would have.
	store := enginetest.Open(t, engine.Config{TracerProvider: tp})
	d, err := cctemporal.NewDriver(context.Background(), store, cctemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: tp.Tracer("temporal-sdk-go")})
	if err != nil {
		t.Fatal(err)
	}
	c := ts.NewClientWithOptions(client.Options{
		ExternalStorage: d.ExternalStorage(),
		Interceptors:    []interceptor.ClientInterceptor{tracing},
	})
	const tq = "photos-traced"
	w := worker.New(c, tq, worker.Options{})
	w.RegisterWorkflow(CountPhotos)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, starter := tp.Tracer("starter").Start(context.Background(), "start photos")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "photos-" + t.Name(), TaskQueue: tq}, CountPhotos, makePhotos(5000))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := run.Get(ctx, &n); err != nil {
		t.Fatal(err)
	}
	starter.End()
	if n != 5000 {
		t.Fatalf("workflow counted %d photos, want 5000", n)
	}

	got := tracingtest.Spans(spans.GetSpans())
	start := got.Named(t, "StartWorkflow:CountPhotos")
	if start.Parent.SpanID() != starter.SpanContext().SpanID() {
		t.Fatalf("StartWorkflow span's parent %s, want the starter's span %s", start.Parent.SpanID(), starter.SpanContext().SpanID())
	}
	// The input's put, and its redeem by the worker, are the only ones.
	put := got.Named(t, "claimcheck.put")
	if put.SpanContext.TraceID() != starter.SpanContext().TraceID() || put.Parent.SpanID() != start.SpanContext.SpanID() {
		t.Fatalf("the input's put is in trace %s under span %s, want the starter's trace %s under StartWorkflow %s; spans: %v",
			put.SpanContext.TraceID(), put.Parent.SpanID(), starter.SpanContext().TraceID(), start.SpanContext.SpanID(), got.Names())
	}
	got.WantChildren(t, put, "meta CreatePending", "blob put", "meta Commit")
	// The worker's redeem links to that put, in whichever trace it runs.
	redeem := got.Named(t, "claimcheck.redeem")
	linked := false
	for _, l := range redeem.Links {
		linked = linked || l.SpanContext.SpanID() == put.SpanContext.SpanID()
	}
	if !linked {
		t.Fatalf("the worker's redeem has no link to the input's put (links %v)", redeem.Links)
	}
}
