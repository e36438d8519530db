package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/internal/testkit/tracingtest"
)

// traced is a store whose spans go to an in-memory exporter, as they
// end, and a tracer for the test's own producer and consumer spans.
type traced struct {
	*bundle
	spans  *tracetest.InMemoryExporter
	tracer trace.Tracer
}

func setupTraced(t *testing.T, mutate ...func(*engine.Config)) *traced {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	b := setup(t, append([]func(*engine.Config){func(c *engine.Config) {
		c.TracerProvider = tp
		c.Sweeper.Disabled = true
	}}, mutate...)...)
	return &traced{bundle: b, spans: exp, tracer: tp.Tracer("test")}
}

func (tr *traced) take() tracingtest.Spans {
	s := tr.spans.GetSpans()
	tr.spans.Reset()
	return tracingtest.Spans(s)
}

// putTraced puts data under a producer span of its own trace and returns
// the ref and the put's span.
func (tr *traced) putTraced(t *testing.T, ns string, data []byte) (claimcheck.Ref, tracetest.SpanStub) {
	t.Helper()
	ctx, producer := tr.tracer.Start(context.Background(), "producer")
	ref, err := tr.store.Put(ctx, ns, bytes.NewReader(data), claimcheck.PutOptions{Labels: map[string]string{"customer": "c-42"}})
	producer.End()
	if err != nil {
		t.Fatal(err)
	}
	spans := tr.take()
	return ref, spans.Named(t, "claimcheck.put")
}

func TestTracingPutSpanTree(t *testing.T) {
	tr := setupTraced(t)
	ctx, producer := tr.tracer.Start(context.Background(), "producer")
	data := jsonDoc(8 << 10)
	ref, err := tr.store.Put(ctx, "auto", bytes.NewReader(data), claimcheck.PutOptions{Labels: map[string]string{"customer": "c-42"}})
	producer.End()
	if err != nil {
		t.Fatal(err)
	}
	spans := tr.take()
	put := spans.Named(t, "claimcheck.put")
	root := spans.Named(t, "producer")
	if put.Parent.SpanID() != root.SpanContext.SpanID() {
		t.Fatalf("the put's span is not a child of the producer's")
	}
	spans.WantChildren(t, put, "meta CreatePending", "blob put", "meta Commit")
	tracingtest.WantAttr(t, put, "claimcheck.namespace", "auto")
	tracingtest.WantAttr(t, put, "claimcheck.tenant", claimcheck.DefaultTenant)
	tracingtest.WantAttr(t, put, "claimcheck.claim.id", ref.ID)
	tracingtest.WantAttr(t, put, "claimcheck.size", int64(len(data)))
	tracingtest.WantAttr(t, put, "claimcheck.stored_size", ref.StoredSize)
	tracingtest.WantAttr(t, put, "claimcheck.compression", ref.Compression)
	tracingtest.WantAttr(t, put, "claimcheck.dedup.hit", false)
	if put.Status.Code == codes.Error {
		t.Fatalf("put span failed: %v", put.Status)
	}
	// Labels stay out unless the namespace is listed in record_labels.
	if _, ok := tracingtest.Attr(put, "claimcheck.labels"); ok {
		t.Fatalf("the put's span carries labels of a namespace that did not opt in")
	}
	blobPut := spans.Named(t, "blob put")
	tracingtest.WantAttr(t, blobPut, "claimcheck.bytes", ref.StoredSize)
	tracingtest.WantAttr(t, spans.Named(t, "meta Commit"), "db.system.name", "sqlite")

	// The same bytes again: a dedup hit.
	if _, err := tr.store.Put(context.Background(), "auto", bytes.NewReader(data), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	tracingtest.WantAttr(t, tr.take().Named(t, "claimcheck.put"), "claimcheck.dedup.hit", true)
}

func TestTracingLabelsOnlyWhereANamespaceOptsIn(t *testing.T) {
	tr := setupTraced(t, func(c *engine.Config) { c.Tracing.RecordLabels = []string{"plain"} })
	_, put := tr.putTraced(t, "plain", []byte("labelled"))
	v, ok := tracingtest.Attr(put, "claimcheck.labels")
	if got := v.AsStringSlice(); !ok || len(got) != 1 || got[0] != "customer=c-42" {
		t.Fatalf("labels on the put's span: %v, want [customer=c-42]", got)
	}
}

func TestTracingRedeemLinksToItsPut(t *testing.T) {
	tr := setupTraced(t)
	ref, put := tr.putTraced(t, "plain", jsonDoc(1024))

	// The consumer's trace is another one: the message carrying the ref
	// lost the producer's headers.
	ctx, consumer := tr.tracer.Start(context.Background(), "consumer")
	p, err := tr.store.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Bytes(); err != nil {
		t.Fatal(err)
	}
	consumer.End()
	spans := tr.take()
	redeem := spans.Named(t, "claimcheck.redeem")
	if redeem.SpanContext.TraceID() == put.SpanContext.TraceID() {
		t.Fatal("the redeem ran in the put's trace; the test needs another")
	}
	spans.WantChildren(t, redeem, "meta ClaimWithBlob", "blob get")
	tracingtest.WantAttr(t, redeem, "claimcheck.claim.id", ref.ID)
	tracingtest.WantAttr(t, redeem, "claimcheck.namespace", "plain")
	tracingtest.WantAttr(t, redeem, "claimcheck.size", ref.Size)
	if len(redeem.Links) != 1 || !tracingtest.Linked(redeem, put) {
		t.Fatalf("redeem links %v, want one to the put's span %v", redeem.Links, put.SpanContext)
	}

	// A release links to the put too.
	if err := tr.store.Release(context.Background(), ref, "billing"); err != nil {
		t.Fatal(err)
	}
	release := tr.take().Named(t, "claimcheck.release")
	if len(release.Links) != 1 || !tracingtest.Linked(release, put) {
		t.Fatalf("release links %v, want one to the put", release.Links)
	}
	tracingtest.WantAttr(t, release, "claimcheck.consumer", "billing")
}

func TestTracingRedeemInThePutsTraceLinksToIt(t *testing.T) {
	tr := setupTraced(t)
	// The consumer continues the producer's trace (the message carried
	// its headers): the redeem is in the put's trace, and still says
	// which put made the claim.
	ctx, producer := tr.tracer.Start(context.Background(), "producer")
	ref, err := tr.store.Put(ctx, "plain", bytes.NewReader(jsonDoc(1024)), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tr.store.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Bytes(); err != nil {
		t.Fatal(err)
	}
	producer.End()
	spans := tr.take()
	put, redeem := spans.Named(t, "claimcheck.put"), spans.Named(t, "claimcheck.redeem")
	if redeem.SpanContext.TraceID() != put.SpanContext.TraceID() {
		t.Fatal("the redeem ran in another trace than the put; the test needs the same")
	}
	if len(redeem.Links) != 1 || !tracingtest.Linked(redeem, put) {
		t.Fatalf("redeem links %v, want one to the put's span %v", redeem.Links, put.SpanContext)
	}
}

func TestTracingFailedRedeem(t *testing.T) {
	tr := setupTraced(t)
	ref, _ := tr.putTraced(t, "short", []byte("expires in an hour"))
	tr.clock.Advance(2 * time.Hour)
	_, err := tr.store.Redeem(context.Background(), ref)
	if !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("redeem after expiry: %v, want gone", err)
	}
	redeem := tr.take().Named(t, "claimcheck.redeem")
	if redeem.Status.Code != codes.Error {
		t.Fatalf("failed redeem's span status %v, want Error", redeem.Status)
	}
	tracingtest.WantAttr(t, redeem, "claimcheck.gone_reason", string(claimcheck.ReasonExpired))
	tracingtest.WantAttr(t, redeem, "claimcheck.claim.id", ref.ID)
}

func TestTracingCollection(t *testing.T) {
	tr := setupTraced(t)
	ref, put := tr.putTraced(t, "short", []byte("collected in the end"))
	ctx := context.Background()

	// Expired: the sweep finishes the claim, in a trace of its own that
	// links to the put.
	tr.clock.Advance(2 * time.Hour)
	if _, err := tr.store.SweepOnce(ctx, 0); err != nil {
		t.Fatal(err)
	}
	spans := tr.take()
	finish := spans.WithCount(t, "claimcheck.sweep.finish", "claimcheck.claims_finished")
	if finish.SpanContext.TraceID() == put.SpanContext.TraceID() {
		t.Fatal("the sweep ran in the put's trace")
	}
	spans.WantChildren(t, finish, "meta FinishDueClaims")
	tracingtest.WantAttr(t, finish, "claimcheck.claims_finished", int64(1))
	if len(finish.Links) != 1 || !tracingtest.Linked(finish, put) {
		t.Fatalf("finish links %v, want one to the put", finish.Links)
	}

	// After the grace period the blob is collected: its object deleted
	// under the collection's span.
	tr.clock.Advance(2 * time.Hour)
	if _, err := tr.store.SweepOnce(ctx, 0); err != nil {
		t.Fatal(err)
	}
	spans = tr.take()
	run := spans.Named(t, "claimcheck.sweep")
	if run.Parent.IsValid() {
		t.Fatalf("the sweep's span has a parent %v; background work starts its own trace", run.Parent)
	}
	collect := spans.WithCount(t, "claimcheck.sweep.collect", "claimcheck.blobs_collected")
	spans.WantChildren(t, collect, "meta BeginCollect", "meta FinishCollect")
	kids := spans.Children(collect)
	if kids["blob delete"]+kids["blob delete_many"] == 0 {
		t.Fatalf("collection deleted no object under its span: %v", kids)
	}
	if _, err := tr.store.Redeem(ctx, ref); !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("redeem after collection: %v", err)
	}
}

func TestTracingOffWrapsNothing(t *testing.T) {
	b := setup(t)
	ref := b.put(t, "plain", []byte("untraced"))
	// A caller's own span (an application with its own tracing) does not
	// turn the store's on.
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, span := tp.Tracer("app").Start(context.Background(), "app")
	if _, err := b.store.Redeem(ctx, ref); err != nil {
		t.Fatal(err)
	}
	span.End()
	if got := exp.GetSpans(); len(got) != 1 {
		t.Fatalf("spans %v, want the application's own only", tracingtest.Spans(got).Names())
	}
}

// TestTracingEverySpanNamed follows a payload through the paths whose
// metadata calls once went unnamed (a span "meta " with an empty
// db.operation.name): a put into a namespace stored uncompressed, which
// saves the object's block table, and a ranged redeem of it, which reads
// the table. Every span is named after its operation, and every
// metadata span carries that operation as db.operation.name.
func TestTracingEverySpanNamed(t *testing.T) {
	tr := setupTraced(t)
	ctx, root := tr.tracer.Start(context.Background(), "app")
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*storedform.BlockSize/16+1)
	ref, err := tr.store.Put(ctx, "plain", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	part, err := tr.store.RedeemRange(ctx, ref, storedform.BlockSize+3, storedform.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(part)
	part.Close()
	if err != nil || !bytes.Equal(got, data[storedform.BlockSize+3:2*storedform.BlockSize+3]) {
		t.Fatalf("ranged redeem: %d bytes, %v", len(got), err)
	}
	root.End()
	spans := tr.take()
	names := spans.Names()
	for _, want := range []string{"meta SaveBlockTable", "meta BlockTable"} {
		if !slices.Contains(names, want) {
			t.Errorf("no span %q among %q", want, names)
		}
	}
	for _, sp := range spans {
		op, isMeta := strings.CutPrefix(sp.Name, "meta ")
		if blobOp, isBlob := strings.CutPrefix(sp.Name, "blob "); sp.Name == "" || strings.TrimSpace(op) == "" || (isBlob && strings.TrimSpace(blobOp) == "") {
			t.Errorf("a span named %q", sp.Name)
		}
		if isMeta {
			tracingtest.WantAttr(t, sp, "db.operation.name", op)
		}
	}
}
