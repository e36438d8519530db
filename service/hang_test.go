package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/service"
)

// hangingLeaser grants every take until hang is set; then its TryLease
// waits until its context ends, as a database that stopped answering.
type hangingLeaser struct{ hang bool }

func (h *hangingLeaser) TryLease(ctx context.Context, _, _ string, _ time.Time, _ time.Duration) (bool, error) {
	if h.hang {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return true, nil
}

func (*hangingLeaser) ReleaseLease(context.Context, string, string) error { return nil }

// TestKeepEndsTheTermOfARenewalThatHangs: a renewal the store never
// answers is cancelled when the term it renews would lapse, and the term
// ends, rather than the holder waiting (and working on) past it.
func TestKeepEndsTheTermOfARenewalThatHangs(t *testing.T) {
	store := &hangingLeaser{}
	clk := clock.NewFake(time.Unix(0, 0))
	l := service.NewLease(store, service.LeaseConfig{Name: "shard-1", Holder: "me", TTL: 50 * time.Millisecond, Clock: clk})
	if term, err := l.Keep(context.Background()); err != nil || !term.Held {
		t.Fatalf("first Keep = %+v, %v; want held", term, err)
	}
	store.hang = true
	clk.Advance(time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := l.Keep(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || l.Held() {
			t.Errorf("Keep on a hung store = %v, held %v; want an error and the term ended", err, l.Held())
		}
	case <-time.After(time.Minute): // a guard against the hang, not a measurement
		t.Fatal("Keep on a hung store did not return")
	}
}
