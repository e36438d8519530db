package clock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/claimcheck/claimcheck/clock"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// A sleep on a fake clock ends when the fake is moved to its end, not
// before, and never by real time passing.
func TestSleepOnFakeEndsWhenAdvanced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := clock.NewFake(t0)
		done := make(chan error, 1)
		go func() { done <- clock.Sleep(context.Background(), f, time.Minute) }()
		synctest.Wait()
		if f.Waiting() != 1 {
			t.Fatalf("%d waits pending, want 1", f.Waiting())
		}
		time.Sleep(time.Hour) // real (bubble) time does not end it
		f.Advance(59 * time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the sleep ended before the fake reached its end: %v", err)
		default:
		}
		f.Advance(time.Second)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if f.Waiting() != 0 {
			t.Fatalf("%d waits pending after the sleep ended", f.Waiting())
		}
	})
}

// A cancelled sleep returns the context's error and leaves no wait
// behind on the fake.
func TestSleepIsCancellable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, clk := range []clock.Clock{clock.NewFake(t0), clock.Real{}, nil} {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- clock.Sleep(ctx, clk, time.Hour) }()
			synctest.Wait()
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("%T: %v, want context.Canceled", clk, err)
			}
			if f, ok := clk.(*clock.Fake); ok && f.Waiting() != 0 {
				t.Fatalf("%d waits pending after a cancelled sleep", f.Waiting())
			}
		}
	})
}

// Real time is what a real clock, or one that cannot wait, sleeps.
func TestSleepInRealTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, clk := range []clock.Clock{clock.Real{}, nowOnly{}, nil} {
			start := time.Now()
			if err := clock.Sleep(context.Background(), clk, time.Second); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != time.Second {
				t.Fatalf("%T slept %s, want 1s", clk, got)
			}
		}
	})
}

type nowOnly struct{}

func (nowOnly) Now() time.Time { return time.Now() }

// A deadline already reached (or a wait of no time) returns at once, with
// the context's error if it has ended.
func TestUntilPastDeadline(t *testing.T) {
	f := clock.NewFake(t0)
	if err := clock.Until(context.Background(), f, t0); err != nil {
		t.Fatal(err)
	}
	if err := clock.Sleep(context.Background(), f, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clock.Sleep(ctx, f, -time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
	if f.Waiting() != 0 {
		t.Fatalf("%d waits pending", f.Waiting())
	}
}
