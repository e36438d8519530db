package blob

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Operations, indexes into meteredStore.ops; opNames are their label
// values. A read or a write is one operation from NewReader or NewWriter
// to Close.
const (
	opGet = iota
	opPut
	opAttributes
	opDelete
	opDeleteMany
	opList
	opPresign
	opGetLifecycle
	opPutLifecycle
	opBeginAppend
	opAppend
	opCompleteAppend
	opAbortAppend
	opGetCORS
	opPutCORS
	numOps
)

var opNames = [numOps]string{
	opGet: "get", opPut: "put", opAttributes: "attributes", opDelete: "delete",
	opDeleteMany: "delete_many", opList: "list", opPresign: "presign",
	opGetLifecycle: "get_lifecycle", opPutLifecycle: "put_lifecycle",
	opBeginAppend: "begin_append", opAppend: "append", opCompleteAppend: "complete_append", opAbortAppend: "abort_append",
	opGetCORS: "get_cors", opPutCORS: "put_cors",
}

// Results, indexes into opMetrics.results; resultNames are their label
// values.
const (
	resOK = iota
	resNotFound
	resCanceled
	resError
	numResults
)

var resultNames = [numResults]string{
	resOK: "ok", resNotFound: "not_found", resCanceled: "canceled", resError: "error",
}

// result classifies the outcome of an operation. A missing object
// (ErrNotFound) is an answer, not a failure: the engine asks about objects
// that may be gone on purpose (the backstop, fsck, the confirm of a direct
// upload). A cancelled context means the caller went away; a deadline
// that passed is an error, because it says the storage was slow.
func result(err error) int {
	switch {
	case err == nil:
		return resOK
	case errors.Is(err, ErrNotFound):
		return resNotFound
	case errors.Is(err, context.Canceled):
		return resCanceled
	default:
		return resError
	}
}

// opMetrics are one operation's instruments, bound to its label values
// once, so that a call costs a clock read and two atomic adds, with no
// label lookup and no allocation.
type opMetrics struct {
	duration prometheus.Observer
	results  [numResults]prometheus.Counter
}

func (o *opMetrics) observe(start time.Time, err error) {
	o.duration.Observe(time.Since(start).Seconds())
	o.results[result(err)].Inc()
}

// WithMetrics returns s with Prometheus metrics around every call, the
// way an instrumented bucket of other object storage libraries does it:
//
//	claimcheck_blob_operations_total{operation,result}
//	claimcheck_blob_operation_duration_seconds{operation}
//
// operation is get, put, attributes, delete, list, and for the optional
// abilities delete_many, presign, get_lifecycle, put_lifecycle,
// begin_append, append, complete_append, abort_append, get_cors and
// put_cors; result
// is ok, not_found (ErrNotFound), canceled (the caller's context was
// cancelled) or error. Every (operation, result) series exists from the
// start, at zero, so rates and ratios need no absent() guards. A get or
// put is measured from NewReader or NewWriter to Close of the stream, and
// fails if any Read or Write of it failed: the duration includes the time
// the caller takes to consume or produce the bytes. DeleteMany fails if
// any of its keys failed. Close is not measured.
//
// The result carries exactly the optional abilities of s (AbilitiesOf
// sees through it), each measured too (CORSConfigurer's
// CORSRequestHeaders, which calls no storage, passed on). The metrics are registered on reg (nil: not registered),
// which panics if it has them already, like MustRegister.
func WithMetrics(s Store, reg prometheus.Registerer) Store {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "claimcheck_blob_operations_total",
		Help: "Blob storage operations, by operation and result (ok, not_found, canceled, error).",
	}, []string{"operation", "result"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "claimcheck_blob_operation_duration_seconds",
		Help: "Duration of blob storage operations; get and put from opening the stream to closing it.",
		// 1ms … ~65s: a small object's attributes to a large upload.
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
	}, []string{"operation"})
	if reg != nil {
		reg.MustRegister(total, duration)
	}
	m := &meteredStore{next: s}
	for op, name := range opNames {
		m.ops[op].duration = duration.WithLabelValues(name)
		for res, rname := range resultNames {
			m.ops[op].results[res] = total.WithLabelValues(name, rname)
		}
	}
	a := AbilitiesOf(s)
	if a.BatchDeleter != nil {
		a.BatchDeleter = meteredBatch{m, a.BatchDeleter}
	}
	if a.Presigner != nil {
		a.Presigner = meteredPresign{m, a.Presigner}
	}
	if a.Lifecycler != nil {
		a.Lifecycler = meteredLifecycle{m, a.Lifecycler}
	}
	if a.Appender != nil {
		a.Appender = meteredAppend{m, a.Appender}
	}
	if a.CORSConfigurer != nil {
		a.CORSConfigurer = meteredCORS{m, a.CORSConfigurer}
	}
	m.abilities = a
	return m
}

// meteredStore is the store WithMetrics returns; the measured abilities
// are separate types, carried in abilities.
type meteredStore struct {
	next      Store
	abilities Abilities
	ops       [numOps]opMetrics
}

// Abilities returns the optional abilities of the wrapped store,
// measured.
func (m *meteredStore) Abilities() Abilities { return m.abilities }

// NewWriter implements Store. The put is counted when the writer is
// closed.
func (m *meteredStore) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	start := time.Now()
	w, err := m.next.NewWriter(ctx, key)
	if err != nil {
		m.ops[opPut].observe(start, err)
		return nil, err
	}
	return &meteredWriter{hintPasser: hintPasser{w}, w: w, op: &m.ops[opPut], start: start}, nil
}

// meteredWriter counts its put once, on the first Close, with the first
// error of the stream.
type meteredWriter struct {
	hintPasser
	w     io.WriteCloser
	op    *opMetrics
	start time.Time
	err   error
	done  bool
}

func (w *meteredWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

func (w *meteredWriter) Close() error {
	err := w.w.Close()
	if !w.done {
		w.done = true
		if w.err == nil {
			w.err = err
		}
		w.op.observe(w.start, w.err)
	}
	return err
}

// NewReader implements Store. The get is counted when the reader is
// closed, or at once if the object cannot be opened.
func (m *meteredStore) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	start := time.Now()
	r, err := m.next.NewReader(ctx, key)
	if err != nil {
		m.ops[opGet].observe(start, err)
		return nil, err
	}
	return &meteredReader{r: r, op: &m.ops[opGet], start: start}, nil
}

// NewRangeReader implements Store; a range read counts as a get.
func (m *meteredStore) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	start := time.Now()
	r, err := m.next.NewRangeReader(ctx, key, offset, length)
	if err != nil {
		m.ops[opGet].observe(start, err)
		return nil, err
	}
	return &meteredReader{r: r, op: &m.ops[opGet], start: start}, nil
}

// meteredReader counts its get once, on the first Close, with the first
// error of the stream (io.EOF is the normal end, not an error).
type meteredReader struct {
	r     io.ReadCloser
	op    *opMetrics
	start time.Time
	err   error
	done  bool
}

func (r *meteredReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

func (r *meteredReader) Close() error {
	err := r.r.Close()
	if !r.done {
		r.done = true
		if r.err == nil {
			r.err = err
		}
		r.op.observe(r.start, r.err)
	}
	return err
}

// Attributes implements Store.
func (m *meteredStore) Attributes(ctx context.Context, key string) (Attributes, error) {
	start := time.Now()
	a, err := m.next.Attributes(ctx, key)
	m.ops[opAttributes].observe(start, err)
	return a, err
}

// Delete implements Store.
func (m *meteredStore) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := m.next.Delete(ctx, key)
	m.ops[opDelete].observe(start, err)
	return err
}

// List implements Store. Each page is one operation.
func (m *meteredStore) List(ctx context.Context, prefix, token string, pageSize int) ([]Object, string, error) {
	start := time.Now()
	objs, next, err := m.next.List(ctx, prefix, token, pageSize)
	m.ops[opList].observe(start, err)
	return objs, next, err
}

// Close implements Store. It closes the wrapped store.
func (m *meteredStore) Close() error { return m.next.Close() }

type meteredBatch struct {
	m  *meteredStore
	bd BatchDeleter
}

// DeleteMany implements BatchDeleter. A batch with failed keys counts as
// an error: the keys stay behind for the next collection.
func (b meteredBatch) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	start := time.Now()
	failed, err := b.bd.DeleteMany(ctx, keys)
	res := err
	if res == nil && len(failed) > 0 {
		res = errBatchFailed
	}
	b.m.ops[opDeleteMany].observe(start, res)
	return failed, err
}

// errBatchFailed stands for a batch whose request succeeded but whose
// answer lists failed keys.
var errBatchFailed = errors.New("blob: some keys of the batch were not deleted")

// MaxBatch implements BatchDeleter.
func (b meteredBatch) MaxBatch() int { return b.bd.MaxBatch() }

type meteredPresign struct {
	m  *meteredStore
	ps Presigner
}

// PresignPut implements Presigner. Signing is local (no request), but a
// refusal (bad digest, key or ttl) is worth seeing.
func (p meteredPresign) PresignPut(ctx context.Context, key string, size int64, sha256Hex string, ttl time.Duration) (PresignedPut, error) {
	start := time.Now()
	pp, err := p.ps.PresignPut(ctx, key, size, sha256Hex, ttl)
	p.m.ops[opPresign].observe(start, err)
	return pp, err
}

type meteredLifecycle struct {
	m  *meteredStore
	lc Lifecycler
}

// LifecycleRules implements Lifecycler.
func (l meteredLifecycle) LifecycleRules(ctx context.Context) ([]LifecycleRule, error) {
	start := time.Now()
	rules, err := l.lc.LifecycleRules(ctx)
	l.m.ops[opGetLifecycle].observe(start, err)
	return rules, err
}

// PutLifecycleRules implements Lifecycler.
func (l meteredLifecycle) PutLifecycleRules(ctx context.Context, rules []LifecycleRule) error {
	start := time.Now()
	err := l.lc.PutLifecycleRules(ctx, rules)
	l.m.ops[opPutLifecycle].observe(start, err)
	return err
}

type meteredCORS struct {
	m  *meteredStore
	cc CORSConfigurer
}

// CORSRequestHeaders implements CORSConfigurer; it calls no storage.
func (c meteredCORS) CORSRequestHeaders() []string { return c.cc.CORSRequestHeaders() }

// CORSRules implements CORSConfigurer.
func (c meteredCORS) CORSRules(ctx context.Context) ([]CORSRule, error) {
	start := time.Now()
	rules, err := c.cc.CORSRules(ctx)
	c.m.ops[opGetCORS].observe(start, err)
	return rules, err
}

// PutCORSRules implements CORSConfigurer.
func (c meteredCORS) PutCORSRules(ctx context.Context, rules []CORSRule) error {
	start := time.Now()
	err := c.cc.PutCORSRules(ctx, rules)
	c.m.ops[opPutCORS].observe(start, err)
	return err
}

type meteredAppend struct {
	m  *meteredStore
	ap Appender
}

// BeginAppend implements Appender.
func (a meteredAppend) BeginAppend(ctx context.Context, key string, size int64) (string, error) {
	start := time.Now()
	h, err := a.ap.BeginAppend(ctx, key, size)
	a.m.ops[opBeginAppend].observe(start, err)
	return h, err
}

// Append implements Appender. Like a put, it is measured while the
// caller's bytes arrive.
func (a meteredAppend) Append(ctx context.Context, key, handle string, size, off int64, r io.Reader, durable func(int64) error) (int64, error) {
	start := time.Now()
	n, err := a.ap.Append(ctx, key, handle, size, off, r, durable)
	a.m.ops[opAppend].observe(start, err)
	return n, err
}

// CompleteAppend implements Appender.
func (a meteredAppend) CompleteAppend(ctx context.Context, key, handle string, size int64) error {
	start := time.Now()
	err := a.ap.CompleteAppend(ctx, key, handle, size)
	a.m.ops[opCompleteAppend].observe(start, err)
	return err
}

// AbortAppend implements Appender.
func (a meteredAppend) AbortAppend(ctx context.Context, key, handle string) error {
	start := time.Now()
	err := a.ap.AbortAppend(ctx, key, handle)
	a.m.ops[opAbortAppend].observe(start, err)
	return err
}
