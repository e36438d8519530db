package metatest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func testLease(t *testing.T, h *harness) {
	ctx := h.ctx()
	try := func(holder string) bool {
		t.Helper()
		ok, err := h.s.TryLease(ctx, "maintenance", holder, h.now(), time.Minute)
		if err != nil {
			t.Fatalf("TryLease(%s): %v", holder, err)
		}
		return ok
	}
	if !try("a") {
		t.Fatal("a free lease must be granted")
	}
	if try("b") {
		t.Fatal("a held lease must be refused to another holder")
	}
	h.clock.Advance(30 * time.Second)
	if !try("a") {
		t.Fatal("the holder must be able to renew")
	}
	h.clock.Advance(59 * time.Second)
	if try("b") {
		t.Fatal("the renewal must extend the lease")
	}
	h.clock.Advance(time.Second)
	if !try("b") {
		t.Fatal("an expired lease must go to the next taker")
	}
	if try("a") {
		t.Fatal("the old holder lost the lease")
	}
	// Other names are independent.
	if ok, err := h.s.TryLease(ctx, "backstop", "a", h.now(), time.Minute); err != nil || !ok {
		t.Fatalf("another lease name: %v %v", ok, err)
	}
	if err := h.s.ReleaseLease(ctx, "maintenance", "a"); err != nil {
		t.Fatal(err)
	}
	if try("c") {
		t.Fatal("a release by a non-holder must not free the lease")
	}
	if err := h.s.ReleaseLease(ctx, "maintenance", "b"); err != nil {
		t.Fatal(err)
	}
	if !try("c") {
		t.Fatal("a released lease must be free")
	}
}

func testLeaseConcurrent(t *testing.T, h *harness) {
	var granted atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := h.s.TryLease(h.ctx(), "singleton", fmt.Sprint("holder-", i), h.now(), time.Minute)
			if err != nil {
				t.Errorf("TryLease: %v", err)
			}
			if ok {
				granted.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := granted.Load(); got != 1 {
		t.Fatalf("%d holders got the lease at once, want exactly 1", got)
	}
}
