package sweep_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/memstore"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/sweep"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle struct {
	meta   meta.Store
	blobs  blob.Store
	counts *blob.Counting // what went through blobs
	clock  *clock.Fake
	sw     *sweep.Sweeper
	metric *sweep.Metrics
}

func setup(t *testing.T, cfg sweep.Config, wrap ...func(meta.Store) meta.Store) *bundle {
	t.Helper()
	ctx := context.Background()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	mem, err := blob.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	b := &bundle{meta: m, clock: clock.NewFake(t0), metric: sweep.NewMetrics(nil)}
	b.blobs, b.counts = blob.NewCounting(mem)
	var ms meta.Store = m
	for _, w := range wrap {
		ms = w(ms)
	}
	b.sw = sweep.New(cfg, ms, b.blobs, nil, b.clock, nil, b.metric)
	return b
}

// seed commits n claims (each with its own blob and object) that are due
// at due, and returns their ids.
func (b *bundle) seed(t *testing.T, n int, due time.Time) []string {
	t.Helper()
	ctx := context.Background()
	now := b.clock.Now()
	ids := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("cc_seed%015d%06d", now.UnixNano()%1e15, i)
		blobID := fmt.Sprintf("b_%s", id)
		key := "ns/" + blobID
		if err := b.meta.CreatePending(ctx, meta.CreatePendingParams{
			Claim: meta.Claim{ID: id, Namespace: "ns", BlobID: blobID, State: meta.ClaimPending, CreatedAt: now,
				ExpiresAt: due, DueAt: due, DueReason: meta.ReasonAborted, GracePeriod: time.Minute, Consumers: 1},
			Blob: meta.Blob{ID: blobID, Namespace: "ns", Key: key, State: meta.BlobStaging, CreatedAt: now, StateAt: now, CollectAt: due},
			Now:  now,
		}); err != nil {
			t.Fatal(err)
		}
		w, err := b.blobs.NewWriter(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(id)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.meta.Commit(ctx, meta.CommitParams{ClaimID: id, BlobID: blobID, Digest: fmt.Sprintf("sha256:%064x", i+1),
			Size: int64(len(id)), StoredSize: int64(len(id)), Compression: "none", Now: now, DueAt: due, DueReason: meta.ReasonExpired}); err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

func (b *bundle) deleted(t *testing.T, ids []string) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		c, err := b.meta.Claim(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if c.State == meta.ClaimDeleted {
			n++
		}
	}
	return n
}

func TestRunOnceFinishesAndCollects(t *testing.T) {
	b := setup(t, sweep.Config{PageSize: 7})
	ids := b.seed(t, 30, t0.Add(time.Minute))
	if res, err := b.sw.RunOnce(context.Background(), 0); err != nil || res.Ops() != 0 {
		t.Fatalf("nothing is due yet: %+v %v", res, err)
	}
	b.clock.Advance(time.Minute)
	res, err := b.sw.RunOnce(context.Background(), 0)
	if err != nil || res.ClaimsFinished != 30 || res.BlobsCollected != 0 {
		t.Fatalf("at the deadline: %+v %v (blobs wait for their grace period)", res, err)
	}
	b.clock.Advance(time.Minute)
	res, err = b.sw.RunOnce(context.Background(), 0)
	if err != nil || res.BlobsCollected != 30 {
		t.Fatalf("after grace: %+v %v", res, err)
	}
	if got := b.deleted(t, ids); got != 30 {
		t.Fatalf("%d of 30 claims deleted", got)
	}
	c := b.counts.Counts()
	if c.Deletes != 30 || c.Lists != 0 {
		t.Fatalf("backend requests: %+v; want one delete per blob and no listing", c)
	}
	if got := testutil.ToFloat64(b.metric.Finished.WithLabelValues(meta.ReasonExpired)); got != 30 {
		t.Fatalf("finished metric %v", got)
	}
}

func TestTickIdleGraceAndLagBound(t *testing.T) {
	cfg := sweep.Config{IdleGrace: 5 * time.Minute, MaxLag: time.Minute, LagBudget: 3, MaxOpsPerRun: 10, PageSize: 2, OpDelay: time.Nanosecond}
	b := setup(t, cfg)
	ctx := context.Background()
	ids := b.seed(t, 25, t0.Add(time.Second))

	b.clock.Advance(30 * time.Second)
	b.sw.Touch() // busy
	if res, _ := b.sw.Tick(ctx); res.Ops() != 0 {
		t.Fatalf("busy and within max_lag: must not work, did %+v", res)
	}
	b.clock.Advance(time.Minute)
	b.sw.Touch() // still busy, but the oldest due item is now over max_lag old
	if res, _ := b.sw.Tick(ctx); res.ClaimsFinished != 3 {
		t.Fatalf("over max_lag under traffic: want the lag budget of 3, did %+v", res)
	}
	b.clock.Advance(5 * time.Minute) // idle_grace without operations
	res, _ := b.sw.Tick(ctx)
	if res.Ops() != 10 || res.BlobsCollected != 3 {
		t.Fatalf("idle: want a maintenance run of max_ops_per_run=10 (with the 3 blobs past grace), did %+v", res)
	}
	if got := b.deleted(t, ids); got != 3+res.ClaimsFinished {
		t.Fatalf("%d claims deleted, want %d", got, 3+res.ClaimsFinished)
	}
	if lag := testutil.ToFloat64(b.metric.Lag); lag <= 60 {
		t.Fatalf("lag gauge %v, want the age of the oldest due item", lag)
	}
}

// touching wraps a meta.Store so that traffic "arrives" during a run.
type touching struct {
	meta.Store
	onPage func()
}

func (w touching) FinishDueClaims(ctx context.Context, now time.Time, limit int) ([]meta.FinishResult, error) {
	res, err := w.Store.FinishDueClaims(ctx, now, limit)
	w.onPage()
	return res, err
}

func TestMaintenanceStopsWhenTrafficResumes(t *testing.T) {
	var sw atomic.Pointer[sweep.Sweeper]
	var fc atomic.Pointer[clock.Fake]
	pages := 0
	b := setup(t, sweep.Config{IdleGrace: time.Minute, PageSize: 5, MaxOpsPerRun: 100, OpDelay: time.Nanosecond},
		func(m meta.Store) meta.Store {
			return touching{Store: m, onPage: func() {
				pages++
				if pages == 2 { // a request arrives during the second page
					fc.Load().Advance(time.Millisecond)
					sw.Load().Touch()
				}
			}}
		})
	sw.Store(b.sw)
	fc.Store(b.clock)
	b.seed(t, 50, t0.Add(time.Second))
	b.clock.Advance(2 * time.Minute)
	res, err := b.sw.Tick(context.Background())
	if err != nil || !res.Aborted || res.ClaimsFinished != 10 {
		t.Fatalf("want an aborted run after two pages (10 claims): %+v %v", res, err)
	}
	if got := testutil.ToFloat64(b.metric.Aborts); got != 1 {
		t.Fatalf("aborts metric %v", got)
	}
}

// cancelling wraps a meta.Store and cancels the run's context after a
// number of BeginCollect pages: the sweeper is stopped mid-run.
type cancelling struct {
	meta.Store
	mu     sync.Mutex
	after  int
	calls  int
	cancel context.CancelFunc
}

func (w *cancelling) BeginCollect(ctx context.Context, now time.Time, limit int, retry time.Duration) ([]meta.Blob, error) {
	res, err := w.Store.BeginCollect(ctx, now, limit, retry)
	w.mu.Lock()
	w.calls++
	if w.calls == w.after && w.cancel != nil {
		w.cancel()
	}
	w.mu.Unlock()
	return res, err
}

func TestStoppedMidRunResumesWithoutRepeats(t *testing.T) {
	cw := &cancelling{after: 3}
	b := setup(t, sweep.Config{PageSize: 10}, func(m meta.Store) meta.Store { cw.Store = m; return cw })
	ids := b.seed(t, 100, t0.Add(time.Second))
	b.clock.Advance(time.Second)
	if _, err := b.sw.RunOnce(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Minute) // past the grace period
	ctx, cancel := context.WithCancel(context.Background())
	cw.mu.Lock()
	cw.cancel, cw.calls = cancel, 0
	cw.mu.Unlock()
	res, err := b.sw.RunOnce(ctx, 0)
	if !errors.Is(err, context.Canceled) || res.BlobsCollected == 0 || res.BlobsCollected >= 100 {
		t.Fatalf("the run must stop part-way: %+v %v", res, err)
	}
	first := res.BlobsCollected
	res, err = b.sw.RunOnce(context.Background(), 0)
	if err != nil || first+res.BlobsCollected != 100 {
		t.Fatalf("resumed run collected %d after %d: %v", res.BlobsCollected, first, err)
	}
	if c := b.counts.Counts(); c.Deletes != 100 {
		t.Fatalf("%d deletes for 100 blobs: work was repeated", c.Deletes)
	}
	if got := b.deleted(t, ids); got != 100 {
		t.Fatalf("%d claims deleted", got)
	}
}

// failing fails the first delete of every key.
type failing struct {
	blob.Store
	mu   sync.Mutex
	seen map[string]bool
}

func (f *failing) Delete(ctx context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.seen[key] {
		f.seen[key] = true
		return errors.New("injected: storage unavailable")
	}
	return f.Store.Delete(ctx, key)
}

func TestFailedDeletesAreRetriedWithBackoff(t *testing.T) {
	b := setup(t, sweep.Config{RetryDelay: 10 * time.Second})
	fb := &failing{Store: b.blobs, seen: map[string]bool{}}
	sw := sweep.New(sweep.Config{RetryDelay: 10 * time.Second}, b.meta, fb, nil, b.clock, nil, b.metric)
	b.seed(t, 4, t0.Add(time.Second))
	b.clock.Advance(time.Second)
	if _, err := sw.RunOnce(context.Background(), 0); err != nil { // finishes the claims; the blobs wait out their grace
		t.Fatal(err)
	}
	b.clock.Advance(time.Minute)
	res, err := sw.RunOnce(context.Background(), 0)
	if err != nil || res.DeleteFailures != 4 || res.BlobsCollected != 0 {
		t.Fatalf("first attempt: %+v %v", res, err)
	}
	b.clock.Advance(9 * time.Second)
	if res, _ := sw.RunOnce(context.Background(), 0); res.Ops() != 0 {
		t.Fatalf("retried before the backoff: %+v", res)
	}
	b.clock.Advance(time.Second)
	if res, _ := sw.RunOnce(context.Background(), 0); res.BlobsCollected != 4 {
		t.Fatalf("retry after the backoff: %+v", res)
	}
	if got := testutil.ToFloat64(b.metric.DeleteFailures); got != 4 {
		t.Fatalf("delete failures metric %v", got)
	}
}

// batching adds batch deletes to a store, recording batch sizes.
type batching struct {
	blob.Store
	mu      sync.Mutex
	batches []int
}

func (b *batching) MaxBatch() int { return 8 }
func (b *batching) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	b.mu.Lock()
	b.batches = append(b.batches, len(keys))
	b.mu.Unlock()
	for _, k := range keys {
		if err := b.Store.Delete(ctx, k); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func TestDeletesAreBatchedWhereTheBackendCan(t *testing.T) {
	b := setup(t, sweep.Config{PageSize: 20})
	bb := &batching{Store: b.blobs}
	sw := sweep.New(sweep.Config{PageSize: 20}, b.meta, bb, nil, b.clock, nil, b.metric)
	b.seed(t, 20, t0.Add(time.Second))
	b.clock.Advance(time.Second)
	if _, err := sw.RunOnce(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Minute)
	if res, err := sw.RunOnce(context.Background(), 0); err != nil || res.BlobsCollected != 20 {
		t.Fatalf("%+v %v", res, err)
	}
	if fmt.Sprint(bb.batches) != "[8 8 4]" {
		t.Fatalf("batches %v, want [8 8 4]", bb.batches)
	}
}

func TestStartStopInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, sweep.Config{Interval: time.Second, IdleGrace: time.Minute, OpDelay: time.Millisecond})
		ids := b.seed(t, 5, t0.Add(time.Second))
		b.clock.Advance(2 * time.Minute) // due, and idle for longer than idle_grace
		b.sw.Start(context.Background())
		b.sw.Start(context.Background()) // a second Start is a no-op
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		b.sw.Stop()
		b.sw.Stop() // idempotent
		if got := b.deleted(t, ids); got != 5 {
			t.Fatalf("the background loop finished %d of 5 claims", got)
		}
	})
}

func TestOneMaintenanceRunnerAcrossReplicas(t *testing.T) {
	cfg := sweep.Config{IdleGrace: time.Minute, MaxLag: time.Hour, MaxOpsPerRun: 5, PageSize: 5, OpDelay: time.Nanosecond}
	b := setup(t, cfg)
	other := sweep.New(cfg, b.meta, b.blobs, nil, b.clock, nil, nil) // a second replica
	b.seed(t, 20, t0.Add(time.Second))
	b.clock.Advance(2 * time.Minute)
	// The other replica holds the maintenance lease (it is mid-run).
	if ok, err := b.meta.TryLease(context.Background(), sweep.MaintenanceLease, "replica-2", b.clock.Now(), time.Minute); err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	if res, err := b.sw.Tick(context.Background()); err != nil || res.Ops() != 0 {
		t.Fatalf("a maintenance run while another replica holds the lease: %+v %v", res, err)
	}
	b.clock.Advance(time.Minute) // the holder died: its lease expires
	if res, err := b.sw.Tick(context.Background()); err != nil || res.Ops() != 5 {
		t.Fatalf("after the lease expired: %+v %v", res, err)
	}
	// A finished run gives the lease back at once.
	if res, err := other.Tick(context.Background()); err != nil || res.Ops() != 5 {
		t.Fatalf("the next replica's run: %+v %v", res, err)
	}
}
