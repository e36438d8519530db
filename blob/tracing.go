package blob

import (
	"context"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// WithTracing returns s with an OpenTelemetry span around every call, a
// child of the caller's span: "blob <operation>" (the operation names of
// WithMetrics: get, put, attributes, delete, ...), of kind client, with
// claimcheck.result (ok, not_found, canceled, error) and, for a get or a
// put, claimcheck.bytes, the bytes that went through the stream. Like the
// metrics, a get or a put spans from NewReader or NewWriter to Close, and
// only an error fails a span (a missing object is an answer). Object
// keys are not recorded: they name namespaces and blobs, which the
// engine's spans carry as attributes already. A call whose context
// carries no span gets none. The result carries the abilities of s, the
// traced ones wrapped (AbilitiesOf sees through it). With tp nil it
// returns s itself: tracing off costs nothing here.
func WithTracing(s Store, tp trace.TracerProvider) Store {
	if tp == nil {
		return s
	}
	t := &tracedStore{next: s, tracer: tp.Tracer("github.com/claimcheck/claimcheck/blob")}
	for op, name := range opNames {
		t.names[op] = "blob " + name
		t.opts[op] = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("claimcheck.blob.operation", name))}
	}
	a := AbilitiesOf(s)
	if a.BatchDeleter != nil {
		a.BatchDeleter = tracedBatch{t, a.BatchDeleter}
	}
	if a.Presigner != nil {
		a.Presigner = tracedPresign{t, a.Presigner}
	}
	if a.Lifecycler != nil {
		a.Lifecycler = tracedLifecycle{t, a.Lifecycler}
	}
	if a.Appender != nil {
		a.Appender = tracedAppend{t, a.Appender}
	}
	if a.CORSConfigurer != nil {
		a.CORSConfigurer = tracedCORS{t, a.CORSConfigurer}
	}
	t.abilities = a
	return t
}

type tracedStore struct {
	next      Store
	tracer    trace.Tracer
	abilities Abilities
	names     [numOps]string
	opts      [numOps][]trace.SpanStartOption
}

var noSpan trace.Span = noop.Span{}

var (
	resultKey = attribute.Key("claimcheck.result")
	bytesKey  = attribute.Key("claimcheck.bytes")
)

func (t *tracedStore) start(ctx context.Context, op int) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, noSpan
	}
	return t.tracer.Start(ctx, t.names[op], t.opts[op]...)
}

// endSpan ends sp with the outcome err.
func endSpan(sp trace.Span, err error) {
	if sp.IsRecording() {
		r := result(err)
		sp.SetAttributes(resultKey.String(resultNames[r]))
		if r == resError {
			sp.RecordError(err)
			sp.SetStatus(codes.Error, err.Error())
		}
	}
	sp.End()
}

// Abilities returns the optional abilities of the wrapped store, traced.
func (t *tracedStore) Abilities() Abilities { return t.abilities }

// NewWriter implements Store; the put's span ends when the writer closes.
func (t *tracedStore) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	ctx, sp := t.start(ctx, opPut)
	w, err := t.next.NewWriter(ctx, key)
	if err != nil {
		endSpan(sp, err)
		return nil, err
	}
	if !sp.IsRecording() {
		sp.End()
		return w, nil
	}
	return &tracedWriter{hintPasser: hintPasser{w}, w: w, sp: sp}, nil
}

// tracedWriter ends its span once, on the first Close, with the first
// error of the stream.
type tracedWriter struct {
	hintPasser
	w    io.WriteCloser
	sp   trace.Span
	n    int64
	err  error
	done bool
}

func (w *tracedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

func (w *tracedWriter) Close() error {
	err := w.w.Close()
	if !w.done {
		w.done = true
		if w.err == nil {
			w.err = err
		}
		w.sp.SetAttributes(bytesKey.Int64(w.n))
		endSpan(w.sp, w.err)
	}
	return err
}

// NewReader implements Store; the get's span ends when the reader
// closes, or at once if the object cannot be opened.
func (t *tracedStore) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	ctx, sp := t.start(ctx, opGet)
	return tracedOpen(sp)(t.next.NewReader(ctx, key))
}

// NewRangeReader implements Store; a range read is a get, with its
// range.
func (t *tracedStore) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	ctx, sp := t.start(ctx, opGet)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Int64("claimcheck.range.offset", offset), attribute.Int64("claimcheck.range.length", length))
	}
	return tracedOpen(sp)(t.next.NewRangeReader(ctx, key, offset, length))
}

func tracedOpen(sp trace.Span) func(io.ReadCloser, error) (io.ReadCloser, error) {
	return func(r io.ReadCloser, err error) (io.ReadCloser, error) {
		if err != nil {
			endSpan(sp, err)
			return nil, err
		}
		if !sp.IsRecording() {
			sp.End()
			return r, nil
		}
		return &tracedReader{r: r, sp: sp}, nil
	}
}

// tracedReader ends its span once, on the first Close, with the first
// error of the stream (io.EOF is the normal end).
type tracedReader struct {
	r    io.ReadCloser
	sp   trace.Span
	n    int64
	err  error
	done bool
}

func (r *tracedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

func (r *tracedReader) Close() error {
	err := r.r.Close()
	if !r.done {
		r.done = true
		if r.err == nil {
			r.err = err
		}
		r.sp.SetAttributes(bytesKey.Int64(r.n))
		endSpan(r.sp, r.err)
	}
	return err
}

// Attributes implements Store.
func (t *tracedStore) Attributes(ctx context.Context, key string) (Attributes, error) {
	ctx, sp := t.start(ctx, opAttributes)
	a, err := t.next.Attributes(ctx, key)
	endSpan(sp, err)
	return a, err
}

// Delete implements Store.
func (t *tracedStore) Delete(ctx context.Context, key string) error {
	ctx, sp := t.start(ctx, opDelete)
	err := t.next.Delete(ctx, key)
	endSpan(sp, err)
	return err
}

// List implements Store. Each page is one span.
func (t *tracedStore) List(ctx context.Context, prefix, token string, pageSize int) ([]Object, string, error) {
	ctx, sp := t.start(ctx, opList)
	objs, next, err := t.next.List(ctx, prefix, token, pageSize)
	endSpan(sp, err)
	return objs, next, err
}

// Close implements Store. It closes the wrapped store.
func (t *tracedStore) Close() error { return t.next.Close() }

type tracedBatch struct {
	t  *tracedStore
	bd BatchDeleter
}

// DeleteMany implements BatchDeleter; a batch with failed keys fails.
func (b tracedBatch) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	ctx, sp := b.t.start(ctx, opDeleteMany)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Int("claimcheck.keys", len(keys)))
	}
	failed, err := b.bd.DeleteMany(ctx, keys)
	res := err
	if res == nil && len(failed) > 0 {
		res = errBatchFailed
	}
	endSpan(sp, res)
	return failed, err
}

// MaxBatch implements BatchDeleter.
func (b tracedBatch) MaxBatch() int { return b.bd.MaxBatch() }

type tracedPresign struct {
	t  *tracedStore
	ps Presigner
}

// PresignPut implements Presigner.
func (p tracedPresign) PresignPut(ctx context.Context, key string, size int64, sha256Hex string, ttl time.Duration) (PresignedPut, error) {
	ctx, sp := p.t.start(ctx, opPresign)
	pp, err := p.ps.PresignPut(ctx, key, size, sha256Hex, ttl)
	endSpan(sp, err)
	return pp, err
}

type tracedLifecycle struct {
	t  *tracedStore
	lc Lifecycler
}

// LifecycleRules implements Lifecycler.
func (l tracedLifecycle) LifecycleRules(ctx context.Context) ([]LifecycleRule, error) {
	ctx, sp := l.t.start(ctx, opGetLifecycle)
	rules, err := l.lc.LifecycleRules(ctx)
	endSpan(sp, err)
	return rules, err
}

// PutLifecycleRules implements Lifecycler.
func (l tracedLifecycle) PutLifecycleRules(ctx context.Context, rules []LifecycleRule) error {
	ctx, sp := l.t.start(ctx, opPutLifecycle)
	err := l.lc.PutLifecycleRules(ctx, rules)
	endSpan(sp, err)
	return err
}

type tracedAppend struct {
	t  *tracedStore
	ap Appender
}

// BeginAppend implements Appender.
func (a tracedAppend) BeginAppend(ctx context.Context, key string, size int64) (string, error) {
	ctx, sp := a.t.start(ctx, opBeginAppend)
	h, err := a.ap.BeginAppend(ctx, key, size)
	endSpan(sp, err)
	return h, err
}

// Append implements Appender; its span covers the caller's bytes
// arriving, like a put's.
func (a tracedAppend) Append(ctx context.Context, key, handle string, size, off int64, r io.Reader, durable func(int64) error) (int64, error) {
	ctx, sp := a.t.start(ctx, opAppend)
	n, err := a.ap.Append(ctx, key, handle, size, off, r, durable)
	if sp.IsRecording() {
		sp.SetAttributes(bytesKey.Int64(n), attribute.Int64("claimcheck.offset", off))
	}
	endSpan(sp, err)
	return n, err
}

// CompleteAppend implements Appender.
func (a tracedAppend) CompleteAppend(ctx context.Context, key, handle string, size int64) error {
	ctx, sp := a.t.start(ctx, opCompleteAppend)
	err := a.ap.CompleteAppend(ctx, key, handle, size)
	endSpan(sp, err)
	return err
}

// AbortAppend implements Appender.
func (a tracedAppend) AbortAppend(ctx context.Context, key, handle string) error {
	ctx, sp := a.t.start(ctx, opAbortAppend)
	err := a.ap.AbortAppend(ctx, key, handle)
	endSpan(sp, err)
	return err
}

type tracedCORS struct {
	t  *tracedStore
	cc CORSConfigurer
}

// CORSRequestHeaders implements CORSConfigurer; it calls no storage.
func (c tracedCORS) CORSRequestHeaders() []string { return c.cc.CORSRequestHeaders() }

// CORSRules implements CORSConfigurer.
func (c tracedCORS) CORSRules(ctx context.Context) ([]CORSRule, error) {
	ctx, sp := c.t.start(ctx, opGetCORS)
	rules, err := c.cc.CORSRules(ctx)
	endSpan(sp, err)
	return rules, err
}

// PutCORSRules implements CORSConfigurer.
func (c tracedCORS) PutCORSRules(ctx context.Context, rules []CORSRule) error {
	ctx, sp := c.t.start(ctx, opPutCORS)
	err := c.cc.PutCORSRules(ctx, rules)
	endSpan(sp, err)
	return err
}
