package engine

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// Resumable uploads' locks (resumablelock.go) over the real metadata
// stores: SQLite, and PostgreSQL when it is configured, where the two
// stores are two replicas over one database. Every LockResumable call is
// a holder of its own, so on SQLite two calls on one store contend the
// way two replicas do.

// lockBackends runs fn with two stores over one metadata store and the
// fake clock they share.
func lockBackends(t *testing.T, fn func(t *testing.T, a, b *Store, clk *clock.Fake)) {
	open := func(t *testing.T, dsn string, clk *clock.Fake) *Store {
		s, err := Open(context.Background(), Config{Data: t.TempDir(), Metadata: dsn, Clock: clk, Sweeper: sweep.Config{Disabled: true}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("sqlite", func(t *testing.T) {
		clk := clock.NewFake(upT0)
		s := open(t, "sqlite:"+filepath.Join(t.TempDir(), "claimcheck.db"), clk)
		fn(t, s, s, clk)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, _ := testsvc.Postgres(t)
		clk := clock.NewFake(upT0)
		fn(t, open(t, dsn, clk), open(t, dsn, clk), clk)
	})
}

// lockAttempt is a LockResumable running in the background.
type lockAttempt struct {
	done     chan struct{} // closed when LockResumable returned
	unlock   func() error
	err      error
	released chan struct{} // closed when the holder is asked to let go
	calls    atomic.Int32  // calls of release
}

func tryLock(ctx context.Context, s *Store, id string) *lockAttempt {
	l := &lockAttempt{done: make(chan struct{}), released: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.unlock, l.err = s.LockResumable(ctx, id, func() {
			if l.calls.Add(1) == 1 {
				close(l.released)
			}
		})
	}()
	return l
}

// wait waits for ch, failing the test after a generous bound.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting: %s", what)
	}
}

// held returns the lock of l, failing the test if it was not taken.
func (l *lockAttempt) held(t *testing.T, what string) func() error {
	t.Helper()
	wait(t, l.done, what+" takes the lock")
	if l.err != nil {
		t.Fatalf("%s: %v", what, l.err)
	}
	return l.unlock
}

// handOver unlocks, then checks that next gets the lock, and unlocks it.
func handOver(t *testing.T, unlock func() error, next *lockAttempt, what string) {
	t.Helper()
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := next.held(t, what)(); err != nil {
		t.Fatal(err)
	}
}

// TestResumableLockHandOver: a second request waits while the first
// holds the lock, asks it to let go, and gets the lock once it did.
func TestResumableLockHandOver(t *testing.T) {
	lockBackends(t, func(t *testing.T, a, b *Store, _ *clock.Fake) {
		first := tryLock(t.Context(), a, "cc_handover")
		unlockFirst := first.held(t, "the first request")
		second := tryLock(t.Context(), b, "cc_handover")
		wait(t, first.released, "the holder is asked to let go")
		select {
		case <-second.done:
			t.Fatalf("the second request got the lock while the first held it (%v)", second.err)
		default:
		}
		if err := unlockFirst(); err != nil {
			t.Fatal(err)
		}
		unlockSecond := second.held(t, "the second request")
		if err := unlockSecond(); err != nil {
			t.Fatal(err)
		}
		if err := unlockSecond(); err != nil {
			t.Fatalf("a second unlock: %v", err)
		}
		if n := first.calls.Load(); n != 1 {
			t.Errorf("the first holder was asked to let go %d times, want once", n)
		}
		// Free again: a third request gets it at once.
		if err := tryLock(t.Context(), a, "cc_handover").held(t, "a third request")(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestResumableLockGivesUp: a waiter whose context ends returns its
// error and holds nothing; the holder keeps the lock.
func TestResumableLockGivesUp(t *testing.T) {
	lockBackends(t, func(t *testing.T, a, b *Store, _ *clock.Fake) {
		first := tryLock(t.Context(), a, "cc_givesup")
		unlockFirst := first.held(t, "the first request")
		ctx, cancel := context.WithCancel(t.Context())
		second := tryLock(ctx, b, "cc_givesup")
		wait(t, first.released, "the holder is asked to let go")
		cancel()
		wait(t, second.done, "the waiter gives up")
		if !errors.Is(second.err, context.Canceled) || second.unlock != nil {
			t.Fatalf("a waiter whose context ended: %v, want context.Canceled and no lock", second.err)
		}
		// The first still holds: a new request is refused until it
		// unlocks.
		third := tryLock(t.Context(), b, "cc_givesup")
		select {
		case <-third.done:
			t.Fatalf("a third request got the lock while the first held it (%v)", third.err)
		default:
		}
		handOver(t, unlockFirst, third, "the third request")
	})
}

// TestResumableLockExpires: the lock of a holder that died (it renews no
// more) is taken once its lease expired; the dead holder's unlock, or
// anyone's but the holder's, frees nothing.
func TestResumableLockExpires(t *testing.T) {
	lockBackends(t, func(t *testing.T, a, b *Store, clk *clock.Fake) {
		ctx := t.Context()
		name := uploadLockName("cc_expires")
		if ok, err := a.meta.TryLease(ctx, name, "dead", clk.Now(), uploadLockTTL); err != nil || !ok {
			t.Fatalf("the dead holder's lease: %v %v", ok, err)
		}
		waiter := tryLock(ctx, b, "cc_expires")
		for {
			_, asked, err := a.meta.CheckLease(ctx, name, "dead", clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			if asked {
				break
			}
			select {
			case <-waiter.done:
				t.Fatalf("the waiter got a live lease: %v", waiter.err)
			case <-time.After(10 * time.Millisecond):
			}
		}
		clk.Advance(uploadLockTTL)
		unlock := waiter.held(t, "the waiter, once the dead holder's lease expired")

		if err := a.meta.ReleaseLease(ctx, name, "dead"); err != nil {
			t.Fatal(err)
		}
		next := tryLock(ctx, a, "cc_expires")
		wait(t, waiter.released, "the holder is asked to let go: it still holds the lock")
		handOver(t, unlock, next, "the next request")
	})
}

// TestResumableLockLost: a holder whose lease was taken (it expired: the
// holder could not renew it in time) is asked to let go, and its unlock
// leaves the new holder's lease alone.
func TestResumableLockLost(t *testing.T) {
	lockBackends(t, func(t *testing.T, a, _ *Store, clk *clock.Fake) {
		ctx := t.Context()
		name := uploadLockName("cc_lost")
		holder := tryLock(ctx, a, "cc_lost")
		unlock := holder.held(t, "the holder")
		clk.Advance(uploadLockTTL)
		if ok, err := a.meta.TryLease(ctx, name, "other", clk.Now(), uploadLockTTL); err != nil || !ok {
			t.Fatalf("taking the expired lease: %v %v", ok, err)
		}
		wait(t, holder.released, "the holder that lost its lease is asked to let go")
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
		if held, _, err := a.meta.CheckLease(ctx, name, "other", clk.Now()); err != nil || !held {
			t.Fatalf("the new holder after the old one unlocked: held %v, %v; want held", held, err)
		}
	})
}
