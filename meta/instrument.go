package meta

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

//go:generate go run ./internal/opsgen

// Instrumentation says what Instrument measures and where it reports.
type Instrumentation struct {
	// Registerer takes the metrics (nil: they are counted but not
	// registered). It panics if it has them already, like MustRegister.
	Registerer prometheus.Registerer
	// TracerProvider makes the spans (nil: no spans, at no cost).
	TracerProvider trace.TracerProvider
	// System is the spans' db.system.name ("sqlite", "postgresql"; empty:
	// left out).
	System string
	// Timeout bounds every operation (0: unbounded). An operation still
	// running when it passes is cancelled and fails with an error that
	// wraps claimcheck.ErrUnavailable and names the setting
	// (metadata_timeout), so that a database that stops answering costs a
	// request this long, then a 503, and a background job's lease call
	// fails instead of hanging (ADR 0286).
	Timeout time.Duration
}

// TimeoutSetting is the config key Instrumentation.Timeout comes from,
// named in the error of an operation that ran out of it.
const TimeoutSetting = "metadata_timeout"

// errTimedOut is the cause of a context Instrumentation.Timeout ended.
var errTimedOut = errors.New("metadata operation timed out")

// Instrument returns s with Prometheus metrics and, given a tracer
// provider, OpenTelemetry spans around every operation: every method but
// Close, which is neither measured nor traced. Both come from one table
// of operations generated from the Store interface (instrument_gen.go),
// so that a method added to Store is measured and traced under its own
// name by `go generate ./meta`, with no hand-written forwarder (ADR 0267).
//
// The metrics:
//
//	claimcheck_meta_operations_total{operation,result}
//	claimcheck_meta_operation_duration_seconds{operation}
//
// operation is the method's name (CreatePending, Commit, FinishDueClaims,
// ...). result is ok, not_found (ErrNotFound), conflict (ErrConflict: a
// lost compare-and-swap), refused (*QuotaError, ErrHeld,
// ErrDamagedCandidate, or a *CandidateError: the content is there to
// share), canceled (the caller's context was cancelled) or error; an
// operation that reports a lost race as a normal result (TryLease's
// false, RewrapDataKey's false, FinishClaim's done=false) is ok. Every
// (operation, result) series exists from the start, at zero, so rates and
// ratios need no absent() guards. A call that panics is not counted.
//
// The spans: "meta <Method>", a child of the caller's span, of kind
// client, with the database semantic conventions' db.system.name and
// db.operation.name (the method), and claimcheck.result (the result the
// metrics count). Only an error is a failed span: not found, a lost
// compare-and-swap and a refusal by the rules are answers. A call whose
// context carries no span (work no trace covers) gets none, so that no
// stray one-span traces appear.
//
// Store has no optional interfaces or transaction types, so the wrapper
// is the whole store.
func Instrument(s Store, in Instrumentation) Store {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "claimcheck_meta_operations_total",
		Help: "Metadata store operations, by operation (method) and result (ok, not_found, conflict, refused, canceled, error).",
	}, []string{"operation", "result"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "claimcheck_meta_operation_duration_seconds",
		Help: "Duration of metadata store operations (each one transaction), by operation (method).",
		// 0.5ms … ~8s: an indexed read on SQLite to a transaction queued
		// behind a slow one.
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8),
	}, []string{"operation"})
	if in.Registerer != nil {
		in.Registerer.MustRegister(total, duration)
	}
	w := &instrumented{next: s, timeout: in.Timeout}
	if in.TracerProvider != nil {
		w.tracer = in.TracerProvider.Tracer("github.com/claimcheck/claimcheck/meta")
	}
	for op, name := range opNames {
		o := &w.ops[op]
		o.duration = duration.WithLabelValues(name)
		for res, rname := range resultNames {
			o.results[res] = total.WithLabelValues(name, rname)
		}
		attrs := []attribute.KeyValue{attribute.String("db.operation.name", name)}
		if in.System != "" {
			attrs = append(attrs, attribute.String("db.system.name", in.System))
		}
		o.spanName = "meta " + name
		o.spanOpts = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
	}
	return w
}

// operation is one operation's instruments, bound to its label values
// and span attributes once, so that a call costs two clock reads and two
// atomic adds, with no label lookup and no allocation (and, when traced,
// the span).
type operation struct {
	duration prometheus.Observer
	results  [numResults]prometheus.Counter
	spanName string
	spanOpts []trace.SpanStartOption
}

// instrumented is the Store of Instrument. Its methods, in
// instrument_gen.go, are each the wrapped one between begin and end,
// nothing else.
type instrumented struct {
	next    Store
	tracer  trace.Tracer // nil: tracing off
	ops     [numOps]operation
	timeout time.Duration // Instrumentation.Timeout
}

var _ Store = (*instrumented)(nil)

// Close implements Store. It is neither measured nor traced.
func (w *instrumented) Close() error { return w.next.Close() }

// call is one operation in progress: begin starts it before the wrapped
// call runs, end ends it with the call's error. A call that panics never
// reaches end, so it is not counted and its span not ended.
type call struct {
	o     *operation
	start time.Time
	span  trace.Span
	// ctx and cancel are the operation's bounded context (nil: no bound).
	ctx     context.Context
	cancel  context.CancelFunc
	timeout time.Duration
}

var noSpan trace.Span = noop.Span{}

// begin starts op's clock and, when tracing is on and ctx is in a trace,
// its span, whose context the wrapped call gets.
func (w *instrumented) begin(ctx context.Context, op int) (context.Context, call) {
	o := &w.ops[op]
	c := call{o: o, start: time.Now(), span: noSpan}
	if w.tracer != nil && trace.SpanContextFromContext(ctx).IsValid() {
		ctx, c.span = w.tracer.Start(ctx, o.spanName, o.spanOpts...)
	}
	if w.timeout > 0 {
		ctx, c.cancel = context.WithTimeoutCause(ctx, w.timeout, errTimedOut)
		c.ctx, c.timeout = ctx, w.timeout
	}
	return ctx, c
}

// bounded returns err as unavailable when the operation's own bound
// ended it (not the caller's context): whatever the driver reported
// (a cancelled statement, a closed connection, a rolled-back
// transaction), the database did not answer in time.
func (c call) bounded(err error) error {
	if c.cancel == nil {
		return err
	}
	c.cancel()
	if err == nil || !errors.Is(context.Cause(c.ctx), errTimedOut) {
		return err
	}
	return fmt.Errorf("%w: metadata: no answer within %s (%s): %v", claimcheck.ErrUnavailable, c.timeout, TimeoutSetting, err)
}

var resultKey = attribute.Key("claimcheck.result")

// end records the call's result on its span and its metrics, and
// returns err unchanged.
func (c call) end(err error) error {
	err = c.bounded(err)
	r := result(err)
	if c.span.IsRecording() {
		c.span.SetAttributes(resultKey.String(resultNames[r]))
		if r == resError {
			c.span.RecordError(err)
			c.span.SetStatus(codes.Error, err.Error())
		}
	}
	c.span.End()
	c.o.duration.Observe(time.Since(c.start).Seconds())
	c.o.results[r].Inc()
	return err
}

// Results, indexes into operation.results; resultNames are their label
// values.
const (
	resOK = iota
	resNotFound
	resConflict
	resRefused
	resCanceled
	resError
	numResults
)

var resultNames = [numResults]string{
	resOK: "ok", resNotFound: "not_found", resConflict: "conflict",
	resRefused: "refused", resCanceled: "canceled", resError: "error",
}

// result classifies the outcome of an operation. The contract's own
// answers are not failures: ErrNotFound, a lost compare-and-swap
// (ErrConflict; one reported as a normal result, such as TryLease's false,
// is ok), and a refusal by the rules (*QuotaError, ErrHeld,
// ErrDamagedCandidate, *CandidateError). Neither is a caller that went
// away (a cancelled context); a deadline that passed is an error, because
// it says the database was slow.
func result(err error) int {
	switch {
	case err == nil:
		return resOK
	case errors.Is(err, ErrNotFound):
		return resNotFound
	case errors.Is(err, ErrConflict):
		return resConflict
	case errors.Is(err, ErrHeld), isQuota(err), errors.Is(err, ErrDamagedCandidate), isCandidate(err):
		return resRefused
	case errors.Is(err, context.Canceled):
		return resCanceled
	default:
		return resError
	}
}

// isQuota uses errors.AsType rather than errors.As, whose target escapes
// and would cost an allocation per failed call.
func isQuota(err error) bool {
	_, ok := errors.AsType[*QuotaError](err)
	return ok
}

func isCandidate(err error) bool {
	_, ok := errors.AsType[*CandidateError](err)
	return ok
}
