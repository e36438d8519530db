package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tus/tusd/v2/pkg/handler"

	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/sweep"
)

// TestTusLockWaitRunsOut: a request whose wait for an upload's lock runs
// out is refused as locked (423, which tus clients retry), not as a
// server failure, whether the holder is a request of the same replica
// (the in-process lock) or of another one (the lease); the holder is
// asked to let go either way, and once it has, the lock is free.
func TestTusLockWaitRunsOut(t *testing.T) {
	ctx := context.Background()
	store := enginetest.Open(t, engine.Config{Sweeper: sweep.Config{Disabled: true}})
	replicaA, replicaB := newTusLocker(store), newTusLocker(store)
	if _, ok := replicaA.(tusLocker); !ok {
		t.Fatalf("an engine store's tus locker is %T, want the shared one", replicaA)
	}

	const id = "cc_locked"
	holder, err := replicaA.NewLock(id)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 2)
	if err := holder.Lock(ctx, func() { asked <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	waitBriefly := func(l handler.Locker, who string) {
		t.Helper()
		lock, err := l.NewLock(id)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if err := lock.Lock(wctx, func() {}); !errors.Is(err, handler.ErrFileLocked) {
			t.Fatalf("a request of %s waiting for a held upload: %v, want ErrFileLocked (423)", who, err)
		}
		select {
		case <-asked:
		case <-time.After(10 * time.Second):
			t.Fatalf("the holder was not asked to let go of the upload for a request of %s", who)
		}
	}
	waitBriefly(replicaA, "the same replica")
	waitBriefly(replicaB, "another replica")

	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	next, err := replicaB.NewLock(id)
	if err != nil {
		t.Fatal(err)
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := next.Lock(lctx, func() {}); err != nil {
		t.Fatalf("the lock after its holder let go: %v", err)
	}
	if err := next.Unlock(); err != nil {
		t.Fatal(err)
	}
}
