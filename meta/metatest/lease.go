package metatest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
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

// testLeaseRelease: a waiter's release request reaches the holder (and
// only it), survives the holder's renewals, and goes away when the lease
// changes hands; an expired holder's lease can be taken and a non-holder
// can neither release nor be told it holds it.
func testLeaseRelease(t *testing.T, h *harness) {
	ctx := h.ctx()
	const name = "upload:cc_one"
	check := func(holder string) (held, asked bool) {
		t.Helper()
		held, asked, err := h.s.CheckLease(ctx, name, holder, h.now())
		if err != nil {
			t.Fatalf("CheckLease(%s): %v", holder, err)
		}
		return held, asked
	}
	try := func(holder string) bool {
		t.Helper()
		ok, err := h.s.TryLease(ctx, name, holder, h.now(), 15*time.Second)
		if err != nil {
			t.Fatalf("TryLease(%s): %v", holder, err)
		}
		return ok
	}
	ask := func(holder string) {
		t.Helper()
		if err := h.s.RequestLeaseRelease(ctx, name, holder); err != nil {
			t.Fatalf("RequestLeaseRelease(%s): %v", holder, err)
		}
	}

	if held, asked := check("a"); held || asked {
		t.Fatalf("a free lease: held=%v asked=%v, want neither", held, asked)
	}
	ask("b") // nobody to ask: nothing recorded, nothing created
	if !try("a") {
		t.Fatal("a free lease must be granted")
	}
	if held, asked := check("a"); !held || asked {
		t.Fatalf("a fresh holder: held=%v asked=%v, want held and not asked", held, asked)
	}
	ask("a") // the holder asking itself changes nothing
	if _, asked := check("a"); asked {
		t.Fatal("a holder's own request must not count")
	}

	// Another waits and asks; the holder learns it, also after renewing.
	if try("b") {
		t.Fatal("a held lease must be refused to another holder")
	}
	ask("b")
	if held, asked := check("a"); !held || !asked {
		t.Fatalf("after a request: held=%v asked=%v, want both", held, asked)
	}
	if held, _ := check("b"); held {
		t.Fatal("a waiter must not be told it holds the lease")
	}
	h.clock.Advance(5 * time.Second)
	if !try("a") {
		t.Fatal("the holder must be able to renew")
	}
	if _, asked := check("a"); !asked {
		t.Fatal("a renewal must keep the request")
	}

	// A non-holder's release does nothing.
	if err := h.s.ReleaseLease(ctx, name, "b"); err != nil {
		t.Fatal(err)
	}
	if held, _ := check("a"); !held {
		t.Fatal("a release by a non-holder must leave the holder holding")
	}

	// The holder dies: its lease expires, and the waiter takes it, without
	// the request made of the old holder.
	h.clock.Advance(15 * time.Second)
	if held, _ := check("a"); held {
		t.Fatal("an expired lease must not be reported held")
	}
	if !try("b") {
		t.Fatal("an expired lease must go to the waiter")
	}
	if held, asked := check("b"); !held || asked {
		t.Fatalf("the new holder: held=%v asked=%v, want held and not asked", held, asked)
	}
	if try("a") {
		t.Fatal("the old holder lost the lease")
	}

	// The holder lets go: the next waiter gets it at once.
	ask("c")
	if err := h.s.ReleaseLease(ctx, name, "b"); err != nil {
		t.Fatal(err)
	}
	if !try("c") {
		t.Fatal("a released lease must be free")
	}
	if _, asked := check("c"); asked {
		t.Fatal("a request made of the previous holder must not reach the next")
	}
}

// testLeaseReleaseContended: two holders contend for one lease from
// goroutines, each waiting by trying and asking, each holder giving the
// lease up when asked (or when the other has finished and asks no more).
// Both get it in turn, three times each, never both at once.
func testLeaseReleaseContended(t *testing.T, h *harness) {
	const name = "upload:cc_contended"
	var inside, finished atomic.Int32
	var wg sync.WaitGroup
	for _, holder := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer finished.Add(1)
			ctx := h.ctx()
			for turns := 0; turns < 3; {
				ok, err := h.s.TryLease(ctx, name, holder, h.now(), time.Minute)
				if err != nil {
					t.Errorf("TryLease(%s): %v", holder, err)
					return
				}
				if !ok {
					if err := h.s.RequestLeaseRelease(ctx, name, holder); err != nil {
						t.Errorf("RequestLeaseRelease(%s): %v", holder, err)
						return
					}
					continue
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				for finished.Load() == 0 {
					held, asked, err := h.s.CheckLease(ctx, name, holder, h.now())
					if err != nil {
						t.Errorf("CheckLease(%s): %v", holder, err)
						break
					}
					if !held {
						t.Errorf("%s lost the lease it holds", holder)
					}
					if asked {
						break
					}
				}
				inside.Add(-1)
				if err := h.s.ReleaseLease(ctx, name, holder); err != nil {
					t.Errorf("ReleaseLease(%s): %v", holder, err)
				}
				turns++
			}
		}()
	}
	wg.Wait()
}

// testLeases: Leases lists the live leases under a prefix, by name, with
// their holders and release requests; an expired or released lease is
// not listed, nor one whose name only matches if a LIKE wildcard in the
// prefix were taken as one.
func testLeases(t *testing.T, h *harness) {
	ctx := h.ctx()
	take := h.takeLease
	take("shard_1/b", "r1", time.Minute)
	take("shard_1/a", "r2", time.Minute)
	take("shard_1/short", "r1", time.Second)
	take("shard_1/gone", "r1", time.Minute)
	take("shardX1/wildcard", "r1", time.Minute)
	take("other", "r1", time.Minute)
	if err := h.s.ReleaseLease(ctx, "shard_1/gone", "r1"); err != nil {
		t.Fatal(err)
	}
	if err := h.s.RequestLeaseRelease(ctx, "shard_1/b", "r2"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(2 * time.Second)
	got, err := h.s.Leases(ctx, "shard_1/", h.now())
	want := []meta.LeaseHolding{{Name: "shard_1/a", Holder: "r2"}, {Name: "shard_1/b", Holder: "r1", ReleaseRequested: true}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Leases(shard_1/) = %+v, %v; want %+v", got, err, want)
	}
	if got, err := h.s.Leases(ctx, "none/", h.now()); err != nil || len(got) != 0 {
		t.Fatalf("Leases(none/) = %+v, %v; want none", got, err)
	}
}
