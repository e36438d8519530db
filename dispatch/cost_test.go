package dispatch_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
)

// TestMeasureDeliveryCPU measures the CPU time of this process (the
// dispatcher and a receiver that verifies every signature) per event
// delivered, on SQLite: N events written first, then delivered in one
// go. A measurement of the dispatcher alone, without the puts beside it
// (docs/PERFORMANCE.md, "Pushed events"); it runs only with
// CLAIMCHECK_BENCH_EVENTS set.
func TestMeasureDeliveryCPU(t *testing.T) {
	if os.Getenv("CLAIMCHECK_BENCH_EVENTS") == "" {
		t.Skip("a measurement: set CLAIMCHECK_BENCH_EVENTS=1")
	}
	const n = 3000
	for _, per := range []int{1, 100} {
		e := setup(t, func(c *engine.Config) {
			c.Subscriptions.EventsPerRequest = per
			c.Subscriptions.Interval = 100 * time.Millisecond
		})
		r := newReceiver(t)
		e.subscribe(t, claimcheck.DefaultTenant, r, claimcheck.EventFilter{Types: []string{"created"}})
		for range n {
			e.put(t, "audit", claimcheck.PutOptions{})
			e.clock.Advance(time.Microsecond)
		}
		before, start := cpuTime(), time.Now()
		e.clock.Advance(tick)
		r.wait("every event", func() bool { return len(r.got) >= n })
		used, took := cpuTime()-before, time.Since(start)
		r.check()
		t.Logf("events_per_request %d: %d events in %s, CPU %s per event", per, n, took.Round(time.Millisecond), used/n)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
