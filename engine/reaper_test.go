package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/sweep"
)

// Regression tests of the reaper (the sweeper finishing pending claims
// whose upload deadline passed) and of dead letters, against the two bugs
// of a reaper that refunds quota from a worker outside the transaction
// that changes the row, so a crash in between
// either strands a reserved row or refunds twice. Real SQLite and files,
// a fake clock, the sweeper driven by hand; every test ends with the
// quota drift check.

var reapT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// errKilled stands for a process that died at that point: the call did
// not happen (or its answer was lost) and nothing after it ran.
var errKilled = errors.New("injected: process killed here")

// faultyMeta is the real metadata store with injectable crashes.
type faultyMeta struct {
	meta.Store
	// commitThenKill: CreatePending commits, then the caller gets an
	// error (the process dies right after the insert).
	commitThenKill atomic.Bool
	// killBeforeFinishAbort: the put's own clean-up (FinishClaim) never
	// happens.
	killBeforeFinishAbort atomic.Bool
	// killBeforeFinishDue: the reaper's transaction never commits.
	killBeforeFinishDue atomic.Bool
	// killBeforeFinishCollect: objects are deleted, the state change
	// that records it never happens.
	killBeforeFinishCollect atomic.Bool
}

func (f *faultyMeta) CreatePending(ctx context.Context, p meta.CreatePendingParams) error {
	if err := f.Store.CreatePending(ctx, p); err != nil {
		return err
	}
	if f.commitThenKill.Load() {
		return errKilled
	}
	return nil
}

func (f *faultyMeta) FinishClaim(ctx context.Context, id, reason string, now time.Time, onlyIfDue bool) (meta.FinishResult, bool, error) {
	if reason == meta.ReasonAborted && f.killBeforeFinishAbort.Load() {
		return meta.FinishResult{}, false, errKilled
	}
	return f.Store.FinishClaim(ctx, id, reason, now, onlyIfDue)
}

func (f *faultyMeta) FinishDueClaims(ctx context.Context, now time.Time, limit int) ([]meta.FinishResult, error) {
	if f.killBeforeFinishDue.Load() {
		return nil, errKilled
	}
	return f.Store.FinishDueClaims(ctx, now, limit)
}

func (f *faultyMeta) FinishCollect(ctx context.Context, ids []string, now time.Time) error {
	if f.killBeforeFinishCollect.Load() {
		return errKilled
	}
	return f.Store.FinishCollect(ctx, ids, now)
}

// reaperEnv is one "machine": a data directory whose store can be opened,
// killed and opened again (a restart), like `claimcheck serve` on it.
type reaperEnv struct {
	t      *testing.T
	dir    string
	clock  *clock.Fake
	blobs  blob.Store // wrapped by the test when it injects storage faults
	store  *Store
	meta   *faultyMeta
	reg    *prometheus.Registry
	closed bool
	files  blob.Store
}

const reapQuota = 1 << 20

func newReaperEnv(t *testing.T) *reaperEnv {
	e := &reaperEnv{t: t, dir: t.TempDir(), clock: clock.NewFake(reapT0)}
	e.open()
	t.Cleanup(func() {
		if !t.Failed() {
			assertNoQuotaDrift(t, e.store)
		}
		e.kill()
	})
	return e
}

// open starts a store on the directory: a fresh process, fresh metrics.
func (e *reaperEnv) open() {
	e.t.Helper()
	ctx := context.Background()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(e.dir, "claimcheck.db"))
	if err != nil {
		e.t.Fatal(err)
	}
	files, err := blob.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(e.dir, "blobs")))
	if err != nil {
		e.t.Fatal(err)
	}
	e.meta = &faultyMeta{Store: m}
	e.blobs, e.files = files, files
	e.reg = prometheus.NewRegistry()
	s, err := Open(ctx, Config{
		Data: e.dir, Clock: e.clock, Logger: slog.New(slog.DiscardHandler), Registerer: e.reg,
		MetaStore: e.meta, BlobStore: storeFunc{e},
		Namespaces: map[string]claimcheck.Policy{"up": {
			Quota:   claimcheck.Quota{Bytes: reapQuota, Claims: 100},
			Uploads: claimcheck.UploadPolicy{URLTTL: claimcheck.Duration(15 * time.Minute), ConfirmWithin: claimcheck.Duration(time.Hour)},
			TTL:     claimcheck.TTLPolicy{GracePeriod: claimcheck.Duration(time.Minute)},
		}},
		Sweeper: sweep.Config{Disabled: true, RetryDelay: 10 * time.Second, MaxAttempts: 3},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.store, e.closed = s, false
}

// kill stops the store the way a crash would leave the database and the
// bucket: whatever was committed stays, nothing else runs.
func (e *reaperEnv) kill() {
	if !e.closed {
		e.store.Close()
		e.meta.Store.Close()
		e.files.Close()
		e.closed = true
	}
}

func (e *reaperEnv) restart() {
	e.t.Helper()
	e.kill()
	e.open()
}

// storeFunc forwards to the env's current blob store, so a test can swap
// in a faulty one while the Store keeps its reference.
type storeFunc struct{ e *reaperEnv }

func (s storeFunc) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	return s.e.blobs.NewWriter(ctx, key)
}
func (s storeFunc) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	return s.e.blobs.NewReader(ctx, key)
}
func (s storeFunc) Delete(ctx context.Context, key string) error { return s.e.blobs.Delete(ctx, key) }
func (s storeFunc) Attributes(ctx context.Context, key string) (blob.Attributes, error) {
	return s.e.blobs.Attributes(ctx, key)
}
func (s storeFunc) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	return s.e.blobs.NewRangeReader(ctx, key, offset, length)
}
func (s storeFunc) List(ctx context.Context, prefix, token string, n int) ([]blob.Object, string, error) {
	return s.e.blobs.List(ctx, prefix, token, n)
}
func (s storeFunc) Close() error { return nil }

func (e *reaperEnv) sweep() sweep.Result {
	e.t.Helper()
	res, err := e.store.SweepOnce(context.Background(), 0)
	if err != nil {
		e.t.Fatalf("SweepOnce: %v", err)
	}
	return res
}

// upload inits a direct upload and PUTs the payload, but never confirms.
func (e *reaperEnv) upload(data []byte) claimcheck.Upload {
	e.t.Helper()
	ctx := context.Background()
	u, err := e.store.InitUpload(ctx, "up", claimcheck.UploadRequest{Size: int64(len(data)), Digest: claimcheck.DigestOf(data)})
	if err != nil {
		e.t.Fatalf("InitUpload: %v", err)
	}
	if err := e.store.ReceiveUpload(ctx, u.ID, u.Token, int64(len(data)), bytes.NewReader(data)); err != nil {
		e.t.Fatalf("PUT: %v", err)
	}
	return u
}

func (e *reaperEnv) usage() claimcheck.NamespaceUsage {
	e.t.Helper()
	info, err := e.store.Namespace(context.Background(), "up")
	if err != nil {
		e.t.Fatal(err)
	}
	return info.Usage
}

func (e *reaperEnv) refunded() float64 {
	return testutil.ToFloat64(e.store.sweepMetrics.Reaper.RefundedBytes)
}

// payloadObjects drops the store's owner marker (internal/bucketsetup)
// from a listing: what is left are payloads.
func payloadObjects(objs []blob.Object) []blob.Object {
	var out []blob.Object
	for _, o := range objs {
		if !blob.IsOwnerMarker(o.Key) {
			out = append(out, o)
		}
	}
	return out
}

func (e *reaperEnv) objectCount() int {
	e.t.Helper()
	objs, _, err := e.blobs.List(context.Background(), "", "", 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(payloadObjects(objs))
}

// TestReaperKilledAndRestarted: the process dies at each step of reaping
// an upload that was PUT but never confirmed — before the reaper's
// transaction, and between the object delete and the state change that
// records it — and is started again. The reservation is refunded exactly
// once, the object is gone, the blob row ends deleted, and a late confirm
// answers gone.
func TestReaperKilledAndRestarted(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill func(m *faultyMeta)
	}{
		{"before the reaper's transaction", func(m *faultyMeta) { m.killBeforeFinishDue.Store(true) }},
		{"between object delete and state change", func(m *faultyMeta) { m.killBeforeFinishCollect.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newReaperEnv(t)
			ctx := context.Background()
			kept, err := e.store.Put(ctx, "up", strings.NewReader("a committed claim that stays"), claimcheck.PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Repeat([]byte("u"), 1000)
			u := e.upload(data)
			if got := e.usage(); got.ReservedBytes != 1000 || got.PendingClaims != 1 || got.UsedBytes != kept.Size {
				t.Fatalf("usage after init = %+v", got)
			}

			e.clock.Advance(time.Hour + time.Second) // past confirm_within
			tc.kill(e.meta)
			_, err = e.store.SweepOnce(ctx, 0)
			if !errors.Is(err, errKilled) {
				t.Fatalf("sweep in the dying process: %v, want the injected kill", err)
			}
			refundedBefore := e.refunded()
			e.restart()

			e.clock.Advance(time.Minute) // the retry delay of a blob left in deleting
			res := e.sweep()
			res2 := e.sweep() // anything the first run left due
			if res2.Ops() != 0 {
				t.Errorf("second sweep after restart still found work: %+v", res2)
			}
			if total := refundedBefore + e.refunded(); total != 1000 {
				t.Errorf("bytes refunded over both processes = %v, want 1000 exactly once (after restart: %+v)", total, res)
			}
			if got := e.usage(); got != (claimcheck.NamespaceUsage{UsedBytes: kept.Size, ActiveClaims: 1, FinishedClaims: 1}) {
				t.Errorf("usage after reaping = %+v, want only the kept claim", got)
			}
			if n := e.objectCount(); n != 1 {
				t.Errorf("%d objects left, want only the kept claim's", n)
			}
			c, err := e.store.meta.Claim(ctx, u.ID)
			if err != nil || c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonNeverConfirmed {
				t.Errorf("reaped claim = %+v, %v; want deleted, never_confirmed", c, err)
			}
			if b, err := e.store.meta.Blob(ctx, c.BlobID); err != nil || b.State != meta.BlobDeleted {
				t.Errorf("reaped upload's blob = %+v, %v; want deleted", b, err)
			}
			var gone *claimcheck.GoneError
			if _, err := e.store.ConfirmUpload(ctx, u.ID); !errors.As(err, &gone) || gone.Reason != claimcheck.ReasonNeverConfirmed {
				t.Errorf("late confirm = %v, want gone (never_confirmed)", err)
			}
		})
	}
}

// TestFailureRightAfterInsertNeverStrandsARow is the seed's first bug: its
// init reserved quota, inserted the row and then published the delayed
// clean-up message, so a failure in between left a reserved row nobody
// would ever look at. Here the reservation, the pending claim and its due
// time are one transaction; whatever fails after it, the row is reaped.
func TestFailureRightAfterInsertNeverStrandsARow(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(m *faultyMeta)
		body io.Reader
	}{
		// The insert committed, the process died before it knew.
		{"killed right after the insert", func(m *faultyMeta) { m.commitThenKill.Store(true) }, strings.NewReader("payload")},
		// The body broke off, and the put's own clean-up died too.
		{"body failed and the clean-up died", func(m *faultyMeta) { m.killBeforeFinishAbort.Store(true) }, io.MultiReader(strings.NewReader("part"), errBody{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newReaperEnv(t)
			ctx := context.Background()
			tc.arm(e.meta)
			if _, err := e.store.Put(ctx, "up", tc.body, claimcheck.PutOptions{Size: 7}); err == nil {
				t.Fatal("put succeeded; the fault was not injected")
			}
			e.restart() // nothing of the dead process survives but its rows
			if got := e.usage(); got.PendingClaims != 1 || got.ReservedBytes != 7 {
				t.Fatalf("usage after the failure = %+v, want the pending claim accounted for", got)
			}
			// Not before the deadline: it could be a slow upload.
			if res := e.sweep(); res.ClaimsFinished != 0 {
				t.Fatalf("reaped before its deadline: %+v", res)
			}
			e.clock.Advance(time.Hour + time.Second)
			if res := e.sweep(); res.ClaimsFinished != 1 {
				t.Fatalf("the stranded claim was not reaped: %+v", res)
			}
			if got := e.usage(); got != (claimcheck.NamespaceUsage{FinishedClaims: 1}) {
				t.Errorf("usage after reaping = %+v, want nothing but the one finished claim", got)
			}
			if got := testutil.ToFloat64(e.store.sweepMetrics.Reaper.Reaped.WithLabelValues(meta.ReasonAborted)); got != 1 {
				t.Errorf("reaped metric = %v, want 1", got)
			}
			e.clock.Advance(time.Minute)
			e.sweep()
			if n := e.objectCount(); n != 0 {
				t.Errorf("%d objects left behind", n)
			}
		})
	}
}

type errBody struct{}

func (errBody) Read([]byte) (int, error) { return 0, errors.New("injected: connection reset") }

// TestCleanupDeliveredTwiceRefundsOnce is the seed's second bug: its
// worker refunded quota, then updated the row, so a redelivered clean-up
// (or two workers) refunded twice. Here two sweepers, an in-line finish
// and a confirm all race for the same due upload, many times; exactly one
// of them finishes it, and the refund happens once, in that transaction.
func TestCleanupDeliveredTwiceRefundsOnce(t *testing.T) {
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	e := newReaperEnv(t)
	ctx := context.Background()
	other := sweep.New(sweep.Config{RetryDelay: 10 * time.Second}, e.meta, e.blobs, nil, e.clock, slog.New(slog.DiscardHandler), nil)
	for round := range rounds {
		data := []byte(strings.Repeat("r", 100+round))
		u := e.upload(data)
		e.clock.Advance(time.Hour) // exactly at the deadline: due, and confirm is gone
		var (
			wg       sync.WaitGroup
			finishes atomic.Int64
			confirms atomic.Int64
		)
		run := func(fn func()) {
			wg.Add(1)
			go func() { defer wg.Done(); fn() }()
		}
		run(func() {
			res, err := e.store.SweepOnce(ctx, 0)
			if err != nil {
				t.Error(err)
			}
			finishes.Add(int64(res.ClaimsFinished))
		})
		run(func() {
			res, err := other.RunOnce(ctx, 0)
			if err != nil {
				t.Error(err)
			}
			finishes.Add(int64(res.ClaimsFinished))
		})
		run(func() {
			_, done, err := e.meta.FinishClaim(ctx, u.ID, "", e.clock.Now(), true)
			if err != nil {
				t.Error(err)
			}
			if done {
				finishes.Add(1)
			}
		})
		run(func() {
			if _, err := e.store.ConfirmUpload(ctx, u.ID); err == nil {
				confirms.Add(1)
			}
		})
		wg.Wait()
		// A confirm at the deadline is too late: the claim is due. The
		// confirm may itself finish it in-line (it is a finisher too), so
		// the observable finishes are one, or none when it did.
		if f, c := finishes.Load(), confirms.Load(); f > 1 || c != 0 {
			t.Fatalf("round %d: %d finishes and %d confirms, want at most one finish and no confirm", round, f, c)
		}
		if c, err := e.meta.Claim(ctx, u.ID); err != nil || c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonNeverConfirmed {
			t.Fatalf("round %d: claim after the race = %+v, %v; want deleted, never_confirmed", round, c, err)
		}
		// The clean-up delivered once more, after the fact.
		if _, done, err := e.meta.FinishClaim(ctx, u.ID, meta.ReasonNeverConfirmed, e.clock.Now(), false); err != nil || done {
			t.Fatalf("round %d: repeated finish: done=%v err=%v, want nothing to do", round, done, err)
		}
		if got := e.usage(); got.ReservedBytes != 0 || got.PendingClaims != 0 {
			t.Fatalf("round %d: usage %+v after the race", round, got)
		}
		assertNoQuotaDrift(t, e.store)
	}
	e.clock.Advance(time.Hour)
	e.sweep()
	if n := e.objectCount(); n != 0 {
		t.Errorf("%d objects left after all rounds", n)
	}
}

// deniedDeletes fails every object delete while on.
type deniedDeletes struct {
	blob.Store
	on atomic.Bool
}

func (d *deniedDeletes) Delete(ctx context.Context, key string) error {
	if d.on.Load() {
		return errors.New("injected: access denied")
	}
	return d.Store.Delete(ctx, key)
}

// TestReapedUploadDeleteEndsInDeadLetter: the object of a reaped upload
// cannot be deleted; after max_attempts the blob is parked (no more
// attempts, however long we wait), the quota stays refunded exactly once,
// and a dlq retry after the storage is fixed collects it.
func TestReapedUploadDeleteEndsInDeadLetter(t *testing.T) {
	e := newReaperEnv(t)
	ctx := context.Background()
	denied := &deniedDeletes{Store: e.blobs}
	denied.on.Store(true)
	e.blobs = denied
	e.upload(bytes.Repeat([]byte("d"), 500))
	e.clock.Advance(time.Hour + time.Second)

	for attempt, wait := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		e.clock.Advance(wait)
		if res := e.sweep(); res.DeleteFailures != 1 {
			t.Fatalf("attempt %d: %+v", attempt+1, res)
		}
	}
	page, err := e.store.DeadLetters(ctx, claimcheck.DeadLetterQuery{})
	if err != nil || len(page.DeadLetters) != 1 || page.DeadLetters[0].Attempts != 3 || page.Next != "" {
		t.Fatalf("dead letters = %+v, %v; want one blob after 3 attempts", page, err)
	}
	dead := page.DeadLetters
	e.clock.Advance(24 * time.Hour)
	if res := e.sweep(); res.Ops() != 0 || res.DeleteFailures != 0 {
		t.Errorf("a parked blob was retried: %+v", res)
	}
	if got := e.usage(); got != (claimcheck.NamespaceUsage{FinishedClaims: 1}) {
		t.Errorf("usage with a dead letter = %+v, want nothing: the refund happened when the claim was reaped", got)
	}
	if got := e.refunded(); got != 500 {
		t.Errorf("refunded %v bytes, want 500 once", got)
	}
	if n := e.objectCount(); n != 1 {
		t.Errorf("%d objects: the parked blob still owns its object", n)
	}

	denied.on.Store(false)
	if back, err := e.store.RetryDeadLetter(ctx, dead[0].BlobID); err != nil || back.BlobID != dead[0].BlobID {
		t.Fatalf("RetryDeadLetter = %+v, %v", back, err)
	}
	if res := e.sweep(); res.BlobsCollected != 1 {
		t.Errorf("sweep after retry: %+v", res)
	}
	if n := e.objectCount(); n != 0 {
		t.Errorf("%d objects after the retried collection", n)
	}
	if got := e.refunded(); got != 500 {
		t.Errorf("refunded %v bytes after the retry, want still 500", got)
	}
}
