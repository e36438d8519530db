package tracing

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/claimcheck/claimcheck"
)

// The attributes of claimcheck's spans, the ones a user filters on. Their
// names are part of what operators build dashboards on: change none.
const (
	Namespace   = attribute.Key("claimcheck.namespace")
	Tenant      = attribute.Key("claimcheck.tenant")
	ClaimID     = attribute.Key("claimcheck.claim.id")
	Size        = attribute.Key("claimcheck.size")
	StoredSize  = attribute.Key("claimcheck.stored_size")
	Compression = attribute.Key("claimcheck.compression")
	DedupHit    = attribute.Key("claimcheck.dedup.hit")
	DigestFirst = attribute.Key("claimcheck.digest_first")
	GoneReason  = attribute.Key("claimcheck.gone_reason")
	Range       = attribute.Key("claimcheck.range")
	Consumer    = attribute.Key("claimcheck.consumer")
	Labels      = attribute.Key("claimcheck.labels")
	Encrypted   = attribute.Key("claimcheck.encrypted")
)

// off is the span of a Tracer that is off: a value without state, so
// that handing it out allocates nothing.
var off trace.Span = noop.Span{}

// Tracer starts the spans of one component. A nil *Tracer is tracing
// off: Start returns the context as it is and a span that records
// nothing, with no allocation, so the request path pays a nil check.
type Tracer struct {
	t      trace.Tracer
	labels map[string]bool
}

// NewTracer returns the tracer of tp, nil when tp is nil (tracing off).
// recordLabels are the namespaces whose labels may go into spans
// (Config.RecordLabels).
func NewTracer(tp trace.TracerProvider, recordLabels []string) *Tracer {
	if tp == nil {
		return nil
	}
	t := &Tracer{t: tp.Tracer(ScopeName), labels: map[string]bool{}}
	for _, ns := range recordLabels {
		t.labels[ns] = true
	}
	return t
}

// Start starts a span named name as a child of ctx's span.
func (t *Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t == nil {
		return ctx, off
	}
	return t.t.Start(ctx, name, opts...)
}

// StartRoot starts a span that begins a trace of its own: background
// work (a sweep, a collection, the backstop) that no request caused.
func (t *Tracer) StartRoot(ctx context.Context, name string) (context.Context, trace.Span) {
	if t == nil {
		return ctx, off
	}
	return t.t.Start(ctx, name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal))
}

// RecordsLabels reports whether the labels of namespace ns may go into
// spans.
func (t *Tracer) RecordsLabels(ns string) bool { return t != nil && t.labels[ns] }

// End ends span with err: a failure sets the status to Error with the
// error's text, and a claim found finished adds its gone reason.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		SetError(span, err)
	}
	span.End()
}

// SetError marks span failed by err.
func SetError(span trace.Span, err error) {
	if ge, ok := errors.AsType[*claimcheck.GoneError](err); ok {
		span.SetAttributes(GoneReason.String(string(ge.Reason)))
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// TraceParent is sc as a W3C traceparent header value, the form a
// claim keeps the span that created it in; empty when sc is not valid or
// not sampled (no backend would have it).
func TraceParent(sc trace.SpanContext) string {
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["traceparent"]
}

// SpanContextOf parses a traceparent kept by TraceParent; the zero
// SpanContext when it is empty or not one.
func SpanContextOf(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}
