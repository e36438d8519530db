package meta

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// WithTracing returns s with an OpenTelemetry span around every method
// but Close, a child of the caller's span: "meta <Method>", of kind
// client, with the database semantic conventions' db.system.name (system:
// "sqlite", "postgresql"; empty: left out) and db.operation.name (the
// method), and claimcheck.result (the outcome WithMetrics counts: ok,
// not_found, conflict, refused, canceled, error). Only an error is a
// failed span: not found, a lost compare-and-swap and a refusal by the
// rules are answers. A call whose context carries no span (work no trace
// covers) gets none, so that no stray one-span traces appear. With tp nil
// it returns s itself: tracing off costs nothing here.
func WithTracing(s Store, tp trace.TracerProvider, system string) Store {
	if tp == nil {
		return s
	}
	t := &traced{next: s, tracer: tp.Tracer("github.com/claimcheck/claimcheck/meta")}
	for op, name := range opNames {
		attrs := []attribute.KeyValue{attribute.String("db.operation.name", name)}
		if system != "" {
			attrs = append(attrs, attribute.String("db.system.name", system))
		}
		t.names[op] = "meta " + name
		t.opts[op] = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
	}
	return t
}

// traced is the Store of WithTracing; its methods are in tracing_ops.go.
type traced struct {
	next   Store
	tracer trace.Tracer
	// names and opts are each operation's span name and start options,
	// built once.
	names [numOps]string
	opts  [numOps][]trace.SpanStartOption
}

var _ Store = (*traced)(nil)

var noSpan trace.Span = noop.Span{}

func (t *traced) start(ctx context.Context, op int) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, noSpan
	}
	return t.tracer.Start(ctx, t.names[op], t.opts[op]...)
}

var resultKey = attribute.Key("claimcheck.result")

func (t *traced) end(sp trace.Span, err error) error {
	if sp.IsRecording() {
		r := result(err)
		sp.SetAttributes(resultKey.String(resultNames[r]))
		if r == resError {
			sp.RecordError(err)
			sp.SetStatus(codes.Error, err.Error())
		}
	}
	sp.End()
	return err
}

// spanEnd1 and spanEnd2 end calls that return one or two values besides
// the error, like timer1 and timer2.
type (
	spanEnd1[T any] struct {
		t  *traced
		sp trace.Span
	}
	spanEnd2[T, U any] struct {
		t  *traced
		sp trace.Span
	}
)

func (e spanEnd1[T]) end(v T, err error) (T, error) { return v, e.t.end(e.sp, err) }

func (e spanEnd2[T, U]) end(v T, w U, err error) (T, U, error) {
	return v, w, e.t.end(e.sp, err)
}

// Close implements Store. It is not traced.
func (t *traced) Close() error { return t.next.Close() }
