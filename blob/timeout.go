package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// TimeoutSetting is the config key WithTimeout's bound comes from, named
// in the error of a call that ran out of it (ADR 0289).
const TimeoutSetting = "storage_timeout"

// NoProgressError is the error of a storage call that WithTimeout
// cancelled because the storage made no progress for its bound. FaultOf
// reads it as the storage being unavailable, never as damage to the
// object. It does not unwrap to what the cancelled call returned (a
// context's cancellation, as a rule): callers treat a cancellation as
// their own caller gone away, and this is the storage's failure.
type NoProgressError struct {
	Op    string        // the operation's name (get, put, attributes, ...)
	Bound time.Duration // the bound that passed
	Err   error         // what the cancelled call returned, for the message
}

func (e *NoProgressError) Error() string {
	return fmt.Sprintf("storage %s made no progress within %s (%s): %v", e.Op, e.Bound, TimeoutSetting, e.Err)
}

// errStalled is the cause of a context WithTimeout's watchdog ended.
var errStalled = errors.New("blob: storage made no progress")

// WithTimeout returns s with every call bounded by idle (ADR 0289): a
// call that makes no progress for that long is cancelled and fails with
// a *NoProgressError, so that a storage that accepts connections and
// never answers costs a request idle, then a 503, instead of holding it
// until the client gives up.
//
// Progress is a call returning. A call that is one request (attributes,
// delete, a list page, a batch delete, the abilities' calls) has idle
// in all. A stream (NewWriter, NewReader, NewRangeReader) is bounded
// while the storage has it: during the opening call, each Write or Read
// and Close, each timed from its own start, so that a large payload on a
// slow link goes on as long as every piece moves, and a caller that
// produces or consumes the bytes slowly (a client's upload, a consumer's
// download) is never what runs the bound out. An Append is bounded while
// the store holds it between two reads of its source and its durable
// callbacks. idle <= 0 returns s itself. The result carries the
// abilities of s, bounded.
func WithTimeout(s Store, idle time.Duration) Store {
	if idle <= 0 {
		return s
	}
	t := &timedStore{next: s, idle: idle}
	a := AbilitiesOf(s)
	if a.BatchDeleter != nil {
		a.BatchDeleter = timedBatch{t, a.BatchDeleter}
	}
	if a.Presigner != nil {
		a.Presigner = timedPresign{t, a.Presigner}
	}
	if a.Lifecycler != nil {
		a.Lifecycler = timedLifecycle{t, a.Lifecycler}
	}
	if a.Appender != nil {
		a.Appender = timedAppend{t, a.Appender}
	}
	if a.CORSConfigurer != nil {
		a.CORSConfigurer = timedCORS{t, a.CORSConfigurer}
	}
	t.abilities = a
	return t
}

type timedStore struct {
	next      Store
	idle      time.Duration
	abilities Abilities
}

// Abilities returns the optional abilities of the wrapped store, bounded.
func (t *timedStore) Abilities() Abilities { return t.abilities }

// watchdog cancels its context when it has been armed for idle without
// being disarmed: one timer for the whole life of a call or a stream.
type watchdog struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	idle   time.Duration
	op     string
	mu     sync.Mutex // orders arm and disarm with a Close from another goroutine
}

// newWatchdog returns a watchdog over a context derived from ctx,
// already armed.
func (t *timedStore) newWatchdog(ctx context.Context, op int) *watchdog {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{ctx: ctx, cancel: cancel, idle: t.idle, op: opNames[op]}
	w.timer = time.AfterFunc(t.idle, func() { cancel(errStalled) })
	return w
}

// arm starts the bound again: the storage has the call now.
func (w *watchdog) arm() {
	w.mu.Lock()
	w.timer.Reset(w.idle)
	w.mu.Unlock()
}

// disarm stops the bound: the caller has the stream now.
func (w *watchdog) disarm() {
	w.mu.Lock()
	w.timer.Stop()
	w.mu.Unlock()
}

// done ends the watchdog and its context.
func (w *watchdog) done() {
	w.disarm()
	w.cancel(context.Canceled)
}

// failed returns err as a *NoProgressError when the watchdog ended the
// call (not the caller's context), else err unchanged.
func (w *watchdog) failed(err error) error {
	if err == nil || !errors.Is(context.Cause(w.ctx), errStalled) {
		return err
	}
	var np *NoProgressError
	if errors.As(err, &np) {
		return err
	}
	return &NoProgressError{Op: w.op, Bound: w.idle, Err: err}
}

// call runs one request under a watchdog.
func (t *timedStore) call(ctx context.Context, op int, f func(context.Context) error) error {
	w := t.newWatchdog(ctx, op)
	defer w.done()
	return w.failed(f(w.ctx))
}

// NewWriter implements Store.
func (t *timedStore) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	w := t.newWatchdog(ctx, opPut)
	obj, err := t.next.NewWriter(w.ctx, key)
	if err != nil {
		w.done()
		return nil, w.failed(err)
	}
	w.disarm()
	return &timedWriter{hintPasser: hintPasser{obj}, w: obj, dog: w}, nil
}

// timedWriter is a writer whose Write and Close calls are each bounded.
type timedWriter struct {
	hintPasser
	w   io.WriteCloser
	dog *watchdog
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.dog.arm()
	n, err := w.w.Write(p)
	w.dog.disarm()
	return n, w.dog.failed(err)
}

// Close sends what the writer holds back and waits for the storage's
// answer, under the bound; then it ends the writer's context.
func (w *timedWriter) Close() error {
	w.dog.arm()
	err := w.w.Close()
	w.dog.done()
	return w.dog.failed(err)
}

// NewReader implements Store.
func (t *timedStore) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	return t.openReader(ctx, func(ctx context.Context) (io.ReadCloser, error) { return t.next.NewReader(ctx, key) })
}

// NewRangeReader implements Store.
func (t *timedStore) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	return t.openReader(ctx, func(ctx context.Context) (io.ReadCloser, error) {
		return t.next.NewRangeReader(ctx, key, offset, length)
	})
}

func (t *timedStore) openReader(ctx context.Context, open func(context.Context) (io.ReadCloser, error)) (io.ReadCloser, error) {
	w := t.newWatchdog(ctx, opGet)
	r, err := open(w.ctx)
	if err != nil {
		w.done()
		return nil, w.failed(err)
	}
	w.disarm()
	return &timedReader{r: r, dog: w}, nil
}

// timedReader is a reader whose Read calls are each bounded.
type timedReader struct {
	r   io.ReadCloser
	dog *watchdog
}

func (r *timedReader) Read(p []byte) (int, error) {
	r.dog.arm()
	n, err := r.r.Read(p)
	r.dog.disarm()
	if err == io.EOF {
		return n, err
	}
	return n, r.dog.failed(err)
}

func (r *timedReader) Close() error {
	err := r.r.Close()
	r.dog.done()
	return err
}

// Attributes implements Store.
func (t *timedStore) Attributes(ctx context.Context, key string) (a Attributes, err error) {
	err = t.call(ctx, opAttributes, func(ctx context.Context) error {
		a, err = t.next.Attributes(ctx, key)
		return err
	})
	return a, err
}

// Delete implements Store.
func (t *timedStore) Delete(ctx context.Context, key string) error {
	return t.call(ctx, opDelete, func(ctx context.Context) error { return t.next.Delete(ctx, key) })
}

// List implements Store. Each page is one call.
func (t *timedStore) List(ctx context.Context, prefix, token string, pageSize int) (objs []Object, next string, err error) {
	err = t.call(ctx, opList, func(ctx context.Context) error {
		objs, next, err = t.next.List(ctx, prefix, token, pageSize)
		return err
	})
	return objs, next, err
}

// Close implements Store. It closes the wrapped store.
func (t *timedStore) Close() error { return t.next.Close() }

type timedBatch struct {
	t  *timedStore
	bd BatchDeleter
}

// DeleteMany implements BatchDeleter.
func (b timedBatch) DeleteMany(ctx context.Context, keys []string) (failed map[string]error, err error) {
	err = b.t.call(ctx, opDeleteMany, func(ctx context.Context) error {
		failed, err = b.bd.DeleteMany(ctx, keys)
		return err
	})
	return failed, err
}

// MaxBatch implements BatchDeleter.
func (b timedBatch) MaxBatch() int { return b.bd.MaxBatch() }

type timedPresign struct {
	t  *timedStore
	ps Presigner
}

// PresignPut implements Presigner.
func (p timedPresign) PresignPut(ctx context.Context, key string, size int64, sha256Hex string, ttl time.Duration) (pp PresignedPut, err error) {
	err = p.t.call(ctx, opPresign, func(ctx context.Context) error {
		pp, err = p.ps.PresignPut(ctx, key, size, sha256Hex, ttl)
		return err
	})
	return pp, err
}

type timedLifecycle struct {
	t  *timedStore
	lc Lifecycler
}

// LifecycleRules implements Lifecycler.
func (l timedLifecycle) LifecycleRules(ctx context.Context) (rules []LifecycleRule, err error) {
	err = l.t.call(ctx, opGetLifecycle, func(ctx context.Context) error {
		rules, err = l.lc.LifecycleRules(ctx)
		return err
	})
	return rules, err
}

// PutLifecycleRules implements Lifecycler.
func (l timedLifecycle) PutLifecycleRules(ctx context.Context, rules []LifecycleRule) error {
	return l.t.call(ctx, opPutLifecycle, func(ctx context.Context) error { return l.lc.PutLifecycleRules(ctx, rules) })
}

type timedCORS struct {
	t  *timedStore
	cc CORSConfigurer
}

// CORSRequestHeaders implements CORSConfigurer; it calls no storage.
func (c timedCORS) CORSRequestHeaders() []string { return c.cc.CORSRequestHeaders() }

// CORSRules implements CORSConfigurer.
func (c timedCORS) CORSRules(ctx context.Context) (rules []CORSRule, err error) {
	err = c.t.call(ctx, opGetCORS, func(ctx context.Context) error {
		rules, err = c.cc.CORSRules(ctx)
		return err
	})
	return rules, err
}

// PutCORSRules implements CORSConfigurer.
func (c timedCORS) PutCORSRules(ctx context.Context, rules []CORSRule) error {
	return c.t.call(ctx, opPutCORS, func(ctx context.Context) error { return c.cc.PutCORSRules(ctx, rules) })
}

type timedAppend struct {
	t  *timedStore
	ap Appender
}

// BeginAppend implements Appender.
func (a timedAppend) BeginAppend(ctx context.Context, key string, size int64) (h string, err error) {
	err = a.t.call(ctx, opBeginAppend, func(ctx context.Context) error {
		h, err = a.ap.BeginAppend(ctx, key, size)
		return err
	})
	return h, err
}

// Append implements Appender. The bound is off while the store reads
// the caller's source or calls durable (the caller's own work), on
// while the store holds the call otherwise.
func (a timedAppend) Append(ctx context.Context, key, handle string, size, off int64, r io.Reader, durable func(int64) error) (int64, error) {
	w := a.t.newWatchdog(ctx, opAppend)
	defer w.done()
	src := &pausingReader{r: r, dog: w}
	n, err := a.ap.Append(w.ctx, key, handle, size, off, src, func(o int64) error {
		w.disarm()
		defer w.arm()
		return durable(o)
	})
	return n, w.failed(err)
}

// pausingReader disarms its watchdog while its source is read.
type pausingReader struct {
	r   io.Reader
	dog *watchdog
}

func (p *pausingReader) Read(b []byte) (int, error) {
	p.dog.disarm()
	defer p.dog.arm()
	return p.r.Read(b)
}

// CompleteAppend implements Appender.
func (a timedAppend) CompleteAppend(ctx context.Context, key, handle string, size int64) error {
	return a.t.call(ctx, opCompleteAppend, func(ctx context.Context) error { return a.ap.CompleteAppend(ctx, key, handle, size) })
}

// AbortAppend implements Appender.
func (a timedAppend) AbortAppend(ctx context.Context, key, handle string) error {
	return a.t.call(ctx, opAbortAppend, func(ctx context.Context) error { return a.ap.AbortAppend(ctx, key, handle) })
}
