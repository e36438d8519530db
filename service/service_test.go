package service_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/service"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Start returns at once; Stop cancels and waits; both are idempotent, and
// a stopped service does not start again.
func TestStartStop(t *testing.T) {
	var s service.StartStop
	if s.Stop() {
		t.Fatal("Stop of a service never started reported a stop")
	}
	var s2 service.StartStop
	started, ended := make(chan struct{}), make(chan struct{})
	run := func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(ended)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if !s2.Start(ctx, run) {
		t.Fatal("the first Start did not start")
	}
	if s2.Start(ctx, run) {
		t.Fatal("a second Start started again")
	}
	<-started
	cancel() // the caller's context does not stop the service
	select {
	case <-ended:
		t.Fatal("the service ended with the context that started it")
	default:
	}
	if !s2.Stop() {
		t.Fatal("Stop of a running service reported no stop")
	}
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned before the service ended")
	}
	s2.Stop()
	if s2.Start(context.Background(), run) {
		t.Fatal("Start after Stop started again")
	}
}

// Every runs on its clock's schedule: with a fake clock, a run for each
// interval the fake is moved through, never by real time passing; a run
// that outlasts its interval is followed by one at once.
func TestEveryRunsOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := clock.NewFake(t0)
		var runs atomic.Int32
		var slow atomic.Bool
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- service.Every(ctx, service.Config{Name: "test", Interval: time.Second, Clock: f}, func(context.Context) {
				runs.Add(1)
				if slow.CompareAndSwap(true, false) {
					f.Advance(2500 * time.Millisecond) // this run takes two and a half intervals
				}
			})
		}()
		wait := func(want int32) {
			t.Helper()
			synctest.Wait()
			if got := runs.Load(); got != want {
				t.Fatalf("%d runs, want %d", got, want)
			}
		}
		wait(0) // no run at start
		time.Sleep(time.Hour)
		wait(0) // real time does not move a fake schedule
		f.Advance(999 * time.Millisecond)
		wait(0)
		f.Advance(time.Millisecond)
		wait(1)
		f.Advance(time.Second)
		wait(2)
		slow.Store(true)
		f.Advance(time.Second) // run 3 takes until 5.5s: run 4 follows at once
		wait(4)
		f.Advance(499 * time.Millisecond) // 5.999s: the next point of the schedule is 6s
		wait(4)
		f.Advance(time.Millisecond)
		wait(5)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Every returned %v, want context.Canceled", err)
		}
	})
}

func TestEveryRunAtStartAndValidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{}, 1)
		go func() {
			_ = service.Every(ctx, service.Config{Name: "test", Interval: time.Minute, RunAtStart: true}, func(context.Context) {
				ran <- struct{}{}
			})
		}()
		synctest.Wait()
		select {
		case <-ran:
		default:
			t.Fatal("RunAtStart: no run at start")
		}
		cancel()
	})
	for _, c := range []service.Config{{Interval: time.Second}, {Name: "x"}, {Name: "x", Interval: -1}} {
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}

// leases is a Leaser over a map: the rule of meta.Store's TryLease.
type leases struct {
	mu    sync.Mutex
	held  map[string]lease
	tries int
	fail  error
}

type lease struct {
	holder string
	until  time.Time
}

func (l *leases) TryLease(_ context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tries++
	if l.fail != nil {
		return false, l.fail
	}
	if cur, ok := l.held[name]; ok && cur.holder != holder && now.Before(cur.until) {
		return false, nil
	}
	if l.held == nil {
		l.held = map[string]lease{}
	}
	l.held[name] = lease{holder, now.Add(ttl)}
	return true, nil
}

func (l *leases) ReleaseLease(_ context.Context, name, holder string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[name].holder == holder {
		delete(l.held, name)
	}
	return nil
}

// Run runs its work only while the lease is held, and gives it back
// after; another holder is kept out until then or until the TTL.
func TestLeaseRun(t *testing.T) {
	f := clock.NewFake(t0)
	store := &leases{}
	a := service.NewLease(store, service.LeaseConfig{Name: "job", Holder: "a", TTL: time.Minute, Clock: f})
	b := service.NewLease(store, service.LeaseConfig{Name: "job", Holder: "b", TTL: time.Minute, Clock: f})
	ran := false
	held, err := a.Run(context.Background(), func(ctx context.Context) error {
		if held, err := b.Run(ctx, func(context.Context) error { t.Fatal("b ran while a held the lease"); return nil }); held || err != nil {
			t.Fatalf("b: held %v, %v", held, err)
		}
		if err := b.Renew(ctx); !errors.Is(err, service.ErrLost) {
			t.Fatalf("b's Renew while a holds the lease: %v, want ErrLost", err)
		}
		ran = true
		return a.Renew(ctx)
	})
	if !held || err != nil || !ran {
		t.Fatalf("a: held %v, ran %v, %v", held, ran, err)
	}
	// Given back: b takes it at once. Taken without a release, it
	// keeps a out until its TTL is over.
	if ok, err := b.Take(context.Background()); !ok || err != nil {
		t.Fatalf("b after a's run: %v %v", ok, err)
	}
	if ok, _ := a.Take(context.Background()); ok {
		t.Fatal("a took a lease b holds")
	}
	f.Advance(time.Minute)
	if ok, _ := a.Take(context.Background()); !ok {
		t.Fatal("a could not take a lease past its TTL")
	}
}

// Keep renews once RenewAfter has passed, reports a new term after a
// lapse, and ends the term on an error.
func TestLeaseKeep(t *testing.T) {
	f := clock.NewFake(t0)
	store := &leases{}
	l := service.NewLease(store, service.LeaseConfig{Name: "job", Holder: "a", TTL: 9 * time.Second, RenewAfter: 3 * time.Second, Clock: f})
	ctx := context.Background()
	keep := func(want service.Term) {
		t.Helper()
		got, err := l.Keep(ctx)
		if got != want || (err != nil) != (store.fail != nil) {
			t.Fatalf("Keep: %+v %v, want %+v", got, err, want)
		}
	}
	keep(service.Term{Held: true, Tried: true, Began: true})
	f.Advance(3 * time.Second)
	keep(service.Term{Held: true}) // not yet: no write
	if store.tries != 1 {
		t.Fatalf("%d tries, want 1", store.tries)
	}
	f.Advance(time.Millisecond)
	keep(service.Term{Held: true, Tried: true})
	store.fail = errors.New("database down")
	f.Advance(4 * time.Second)
	keep(service.Term{Tried: true})
	store.fail = nil
	keep(service.Term{Held: true, Tried: true, Began: true})
	l.Release(ctx)
	if l.Held() {
		t.Fatal("held after Release")
	}
}

func TestLeaseConfigValidate(t *testing.T) {
	for _, c := range []service.LeaseConfig{{Holder: "a", TTL: 1}, {Name: "x", TTL: 1}, {Name: "x", Holder: "a"}, {Name: "x", Holder: "a", TTL: 1, RenewAfter: -1}} {
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}
