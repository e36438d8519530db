package sweep_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/sweep"
)

// waits records the pauses between pages instead of sleeping them.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(_ context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return nil
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// paced sets up a sweeper under traffic (busy) with a backlog of n claims
// due a second ago; its waits between pages are recorded, not slept.
//
// The interval is 100ms unless cfg sets one: a tick's budget is a tenth of
// the pace, which keeps the backlogs the tests need small.
func paced(t *testing.T, cfg sweep.Config, n int) (*bundle, *waits) {
	t.Helper()
	if cfg.Interval == 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	b := setup(t, cfg)
	w := &waits{}
	b.sw.SetSleep(w.sleep)
	b.seed(t, n, t0.Add(time.Second))
	b.clock.Advance(2 * time.Second)
	return b, w
}

// tick makes the store busy (an operation just now) and ticks once.
func (b *bundle) busyTick(t *testing.T) sweep.Result {
	t.Helper()
	b.sw.Touch()
	res, err := b.sw.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestBacklogMakesThePaceGrow(t *testing.T) {
	b, w := paced(t, sweep.Config{PageSize: 5}, 150)
	start := b.sw.Pace()
	res := b.busyTick(t)
	if res.Ops() != int(start/10) {
		t.Fatalf("first tick under traffic did %d items, want the starting pace's budget %v", res.Ops(), start)
	}
	if b.sw.Pace() <= start {
		t.Fatalf("pace %v after a run that spent its budget with a backlog left; want more than %v", b.sw.Pace(), start)
	}
	prev, prevOps := b.sw.Pace(), res.Ops()
	res = b.busyTick(t)
	if res.Ops() <= prevOps || res.Ops() != int(prev/10) {
		t.Fatalf("second tick did %d items at pace %v; want the grown budget", res.Ops(), prev)
	}
	if got := testutil.ToFloat64(b.metric.Pace); got != b.sw.Pace() || got <= prev {
		t.Fatalf("pace gauge %v, pace %v: the gauge must show the grown pace", got, b.sw.Pace())
	}
	// Under traffic the run is spread over the tick: there are pauses
	// between its pages.
	if len(w.all()) == 0 {
		t.Fatal("a run under traffic paused nowhere between its pages")
	}

	// Past max_lag the pace grows faster.
	b2, _ := paced(t, sweep.Config{PageSize: 5, MaxLag: time.Second}, 50)
	b2.clock.Advance(time.Second)
	b2.busyTick(t)
	if fast, slow := b2.sw.Pace()/start, b.sw.Pace()/prev; fast <= slow {
		t.Fatalf("growth past max_lag %v, within it %v: past max_lag the backlog must weigh more", fast, slow)
	}
}

func TestPaceFollowsTheMachineWhenItCannotKeepUp(t *testing.T) {
	// Every page takes a minute of the injected clock: the tick's runtime
	// (half an interval under traffic) is over after the first page.
	var b *bundle
	b = setup(t, sweep.Config{PageSize: 5}, func(m meta.Store) meta.Store {
		return touching{Store: m, onPage: func() { b.clock.Advance(time.Minute) }}
	})
	b.sw.SetSleep((&waits{}).sleep)
	b.seed(t, 50, t0.Add(time.Second))
	b.clock.Advance(2 * time.Second)
	res := b.busyTick(t)
	if res.ClaimsFinished != 5 {
		t.Fatalf("a run whose runtime is over after one page did %+v", res)
	}
	if b.sw.Pace() > 100 {
		t.Fatalf("pace %v after a run that could not spend its budget; it must not grow", b.sw.Pace())
	}
}

// pressure reports overlapped requests as slower than quiet ones by
// factor.
func pressure(sw *sweep.Sweeper, factor float64) {
	for range 20 {
		sw.Observe(time.Millisecond, false)
		sw.Observe(time.Duration(factor*float64(time.Millisecond)), true)
	}
}

func TestLatencyPressureMakesThePaceShrink(t *testing.T) {
	b, _ := paced(t, sweep.Config{PageSize: 5}, 400)
	for range 4 {
		b.busyTick(t)
	}
	high := b.sw.Pace()
	if high <= 300 {
		t.Fatalf("pace %v after four ticks with a backlog; the test wants it grown", high)
	}
	pressure(b.sw, 3) // requests that met a page took three times as long
	res := b.busyTick(t)
	if got := b.sw.Pace(); got >= high || res.Ops() >= int(high/10) {
		t.Fatalf("under latency pressure the pace went %v → %v and the run did %d items; want both lower", high, got, res.Ops())
	}
	low := b.sw.Pace()
	// Without pressure (overlapped requests as fast as the others) and
	// with the backlog still there, it grows again.
	pressure(b.sw, 1)
	b.busyTick(t)
	if b.sw.Pace() <= low {
		t.Fatalf("pace %v after a tick without pressure; want more than %v", b.sw.Pace(), low)
	}
	// Repeated pressure brings it down to the floor, never below.
	for range 20 {
		pressure(b.sw, 3)
		b.busyTick(t)
	}
	if got := b.sw.Pace(); got != 100 {
		t.Fatalf("pace %v after sustained pressure; want the floor of 100/s", got)
	}
}

func TestPastMaxLagTheBacklogWinsOverLatency(t *testing.T) {
	b, _ := paced(t, sweep.Config{PageSize: 5, MaxLag: time.Second}, 100)
	b.clock.Advance(time.Second)
	b.busyTick(t)
	before := b.sw.Pace()
	pressure(b.sw, 3)
	b.busyTick(t)
	if b.sw.Pace() <= before {
		t.Fatalf("past max_lag the pace went %v → %v under latency pressure; the lag bound must win", before, b.sw.Pace())
	}
}

func TestOperatorLimitsAreHonoured(t *testing.T) {
	t.Run("max_ops_per_run", func(t *testing.T) {
		b, _ := paced(t, sweep.Config{PageSize: 5, MaxOpsPerRun: 12}, 150)
		for range 5 {
			if res := b.busyTick(t); res.Ops() > 12 {
				t.Fatalf("a run did %d items; max_ops_per_run is 12", res.Ops())
			}
		}
		if got := b.sw.Pace(); got != 120 {
			t.Fatalf("pace %v; want it held at max_ops_per_run per interval, 12 per 100ms", got)
		}
	})
	t.Run("op_delay", func(t *testing.T) {
		b, w := paced(t, sweep.Config{PageSize: 10, OpDelay: 40 * time.Millisecond}, 30)
		b.clock.Advance(10 * time.Minute) // idle: a maintenance run, pages back to back but for op_delay
		if _, err := b.sw.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := w.all()
		if len(got) == 0 {
			t.Fatal("no pause between pages")
		}
		for _, d := range got {
			if d < 40*time.Millisecond {
				t.Fatalf("pauses %v; op_delay is 40ms", got)
			}
		}
	})
	t.Run("max_runtime_per_run", func(t *testing.T) {
		var b *bundle
		b = setup(t, sweep.Config{PageSize: 10, MaxRuntimePerRun: 90 * time.Second, IdleGrace: time.Minute},
			func(m meta.Store) meta.Store {
				return touching{Store: m, onPage: func() { b.clock.Advance(time.Minute) }}
			})
		b.seed(t, 50, t0.Add(time.Second))
		b.clock.Advance(2 * time.Minute)
		res, err := b.sw.Tick(context.Background()) // idle: a maintenance run
		if err != nil || res.ClaimsFinished != 20 {
			t.Fatalf("a run with max_runtime_per_run 90s whose pages take a minute each did %+v %v; want two pages", res, err)
		}
	})
	t.Run("lag_budget", func(t *testing.T) {
		b, _ := paced(t, sweep.Config{PageSize: 5, LagBudget: 7, MaxLag: time.Minute}, 30)
		if res := b.busyTick(t); res.Ops() != 0 {
			t.Fatalf("with lag_budget set the sweeper waits for max_lag under traffic; it did %+v", res)
		}
		b.clock.Advance(time.Minute)
		if res := b.busyTick(t); res.Ops() != 7 {
			t.Fatalf("past max_lag with lag_budget 7 it did %+v", res)
		}
	})
}

func TestIdleRunGoesBackToBackAndDrains(t *testing.T) {
	b, w := paced(t, sweep.Config{PageSize: 5}, 40)
	b.clock.Advance(10 * time.Minute) // past idle_grace and the blobs' grace
	res, err := b.sw.Tick(context.Background())
	if err != nil || res.ClaimsFinished != 40 {
		t.Fatalf("an idle run (its runtime on the injected clock never over) did %+v %v; want all 40 claims", res, err)
	}
	if got := w.all(); len(got) != 0 {
		t.Fatalf("an idle run paused %v between pages; without op_delay it goes back to back", got)
	}
}
