package sweep_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/sweep"
)

// overlapping wraps a meta.Store and records how many due pages were in
// flight at once: the test fails if the workers never overlap.
type overlapping struct {
	meta.Store
	now, most atomic.Int32
	gate      chan struct{} // the first pages wait here until enough are in flight
	once      sync.Once
	want      int32
}

func (w *overlapping) FinishDueClaims(ctx context.Context, now time.Time, limit int) ([]meta.FinishResult, error) {
	n := w.now.Add(1)
	defer w.now.Add(-1)
	for {
		m := w.most.Load()
		if n <= m || w.most.CompareAndSwap(m, n) {
			break
		}
	}
	if n >= w.want {
		w.once.Do(func() { close(w.gate) })
	}
	select { // the first pages wait for the others (once, never forever)
	case <-w.gate:
	case <-time.After(10 * time.Second):
		w.once.Do(func() { close(w.gate) })
	}
	return w.Store.FinishDueClaims(ctx, now, limit)
}

// A maintenance run with several pages in flight finishes every due
// claim and collects every blob exactly once, and counts each once.
func TestMaintenanceWithPageWorkersCountsExactly(t *testing.T) {
	ov := &overlapping{gate: make(chan struct{}), want: 2}
	b := setup(t, sweep.Config{IdleGrace: time.Minute, PageSize: 7, PageWorkers: 4},
		func(m meta.Store) meta.Store { ov.Store = m; return ov })
	ctx := context.Background()
	ids := b.seed(t, 200, t0.Add(time.Second))
	b.clock.Advance(2 * time.Minute) // due, and idle past idle_grace
	res, err := b.sw.Tick(ctx)
	if err != nil || res.ClaimsFinished != 200 || res.Aborted {
		t.Fatalf("idle run: %+v %v; want all 200 claims finished", res, err)
	}
	if got := b.deleted(t, ids); got != 200 {
		t.Fatalf("%d of 200 claims deleted", got)
	}
	if got := testutil.ToFloat64(b.metric.Finished.WithLabelValues(meta.ReasonExpired)); got != 200 {
		t.Fatalf("finished metric %v, want 200", got)
	}
	if ov.most.Load() < 2 {
		t.Fatalf("at most %d pages in flight; want several", ov.most.Load())
	}
	b.clock.Advance(2 * time.Minute) // past the blobs' grace period, still idle
	res, err = b.sw.Tick(ctx)
	if err != nil || res.BlobsCollected != 200 || res.ClaimsFinished != 0 {
		t.Fatalf("idle run after grace: %+v %v; want all 200 blobs collected", res, err)
	}
	if c := b.counts.Counts(); c.Deletes != 200 {
		t.Fatalf("%d object deletes, want one per blob", c.Deletes)
	}
	if got := testutil.ToFloat64(b.metric.BlobsCollected); got != 200 {
		t.Fatalf("collected metric %v, want 200", got)
	}
}

// The workers share the run's budget (max_ops_per_run): together they
// never do more.
func TestMaintenanceWithPageWorkersSharesTheBudget(t *testing.T) {
	b := setup(t, sweep.Config{IdleGrace: time.Minute, PageSize: 7, PageWorkers: 4, MaxOpsPerRun: 30})
	ids := b.seed(t, 100, t0.Add(time.Second))
	b.clock.Advance(2 * time.Minute)
	res, err := b.sw.Tick(context.Background())
	if err != nil || res.ClaimsFinished != 30 {
		t.Fatalf("idle run with max_ops_per_run 30: %+v %v", res, err)
	}
	if got := b.deleted(t, ids); got != 30 {
		t.Fatalf("%d claims deleted, want the 30 counted", got)
	}
}

// Traffic stops a maintenance run with several pages in flight; what the
// pages did is counted, no more, no less.
func TestMaintenanceWithPageWorkersStopsWhenTrafficResumes(t *testing.T) {
	var sw atomic.Pointer[sweep.Sweeper]
	var pages atomic.Int32
	b := setup(t, sweep.Config{IdleGrace: time.Minute, PageSize: 5, PageWorkers: 3},
		func(m meta.Store) meta.Store {
			return touching{Store: m, onPage: func() {
				if pages.Add(1) == 2 { // a request arrives during the second page
					sw.Load().Touch()
				}
			}}
		})
	sw.Store(b.sw)
	ids := b.seed(t, 500, t0.Add(time.Second))
	b.clock.Advance(2 * time.Minute)
	res, err := b.sw.Tick(context.Background())
	if err != nil || !res.Aborted || res.ClaimsFinished >= 500 {
		t.Fatalf("want an aborted run: %+v %v", res, err)
	}
	if got := b.deleted(t, ids); got != res.ClaimsFinished {
		t.Fatalf("%d claims deleted, %d counted", got, res.ClaimsFinished)
	}
	if got := testutil.ToFloat64(b.metric.Aborts); got != 1 {
		t.Fatalf("aborts metric %v", got)
	}
}
