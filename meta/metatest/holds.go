package metatest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Legal holds (meta.HoldStore): a held claim survives every finish path
// until its last hold is lifted, and the sweeper does not spin on it.

// holdTests are the hold subtests; Run runs them with the rest.
var holdTests = []struct {
	name string
	fn   func(t *testing.T, h *harness)
}{
	{"HoldClaimBlocksEveryFinish", testHoldClaimBlocksEveryFinish},
	{"HoldNamespace", testHoldNamespace},
	{"HoldClaimAndNamespace", testHoldClaimAndNamespace},
	{"HoldConflicts", testHoldConflicts},
	{"HoldConcurrentWithFinish", testHoldConcurrentWithFinish},
}

func (h *harness) wantActive(id string) {
	h.t.Helper()
	if c := h.claim(id); c.State != meta.ClaimActive {
		h.t.Fatalf("claim %s is %s (%s), want active: a hold must keep it", id, c.State, c.DeleteReason)
	}
}

func (h *harness) wantNothingDue() {
	h.t.Helper()
	if rs := finishDue(h.t, h, 100); len(rs) != 0 {
		h.t.Fatalf("FinishDueClaims finished %v under a hold", finishedIDs(rs))
	}
	// Blobs that finished claims let go are collected first: only claims
	// count here.
	var bids []string
	for _, b := range h.beginCollect(100, time.Minute) {
		bids = append(bids, b.ID)
	}
	if err := h.s.FinishCollect(h.ctx(), bids, h.now()); err != nil {
		h.t.Fatalf("FinishCollect: %v", err)
	}
	oldest, err := h.s.OldestDue(h.ctx())
	if err != nil {
		h.t.Fatalf("OldestDue: %v", err)
	}
	if !oldest.IsZero() {
		h.t.Fatalf("OldestDue = %v: a parked claim must leave the due index", oldest)
	}
}

func testHoldClaimBlocksEveryFinish(t *testing.T, h *harness) {
	res := h.put(put{DeleteAfterRead: true, Retention: time.Minute, MaxAge: time.Hour})
	id := res.Claim.ID
	if err := h.s.SetClaimHold(h.ctx(), id, "case 42", h.now()); err != nil {
		t.Fatalf("SetClaimHold: %v", err)
	}
	hs, err := h.s.ClaimHolds(h.ctx(), id)
	if err != nil || hs.Claim == nil || hs.Claim.Reason != "case 42" || hs.Namespace != nil {
		t.Fatalf("ClaimHolds = %+v, %v", hs, err)
	}
	wantTime(t, "hold At", hs.Claim.At, epoch)
	if n, err := h.s.HeldClaims(h.ctx(), "ns"); err != nil || n != 1 {
		t.Fatalf("HeldClaims = %d, %v", n, err)
	}

	// A read lowers the kept due time (delete_after_read) but finishes nothing.
	if _, err := h.s.RecordReads(h.ctx(), []meta.Read{{ClaimID: id, Namespace: "ns", At: h.now()}}); err != nil {
		t.Fatal(err)
	}
	if c := h.claim(id); !c.DueAt.Equal(epoch.Add(time.Minute)) || c.DueReason != meta.ReasonReadRetention {
		t.Errorf("due after read = %v %s, want read retention after a minute", c.DueAt, c.DueReason)
	}
	// Release before the kept deadline still counts.
	if _, err := h.s.Release(h.ctx(), id, "billing", h.now()); err != nil {
		t.Fatalf("Release: %v", err)
	}

	h.clock.Advance(2 * time.Hour) // past read retention and max_age
	h.wantNothingDue()
	if _, done := h.finish(id, meta.ReasonDeleted); done {
		t.Fatal("explicit FinishClaim finished a held claim")
	}
	if _, done, err := h.s.FinishClaim(h.ctx(), id, "", h.now(), true); err != nil || done {
		t.Fatalf("due FinishClaim: done=%v err=%v", done, err)
	}
	// GC keeps the blob: the held claim is live.
	if bs := h.beginCollect(100, time.Minute); len(bs) != 0 {
		t.Fatalf("BeginCollect took %d blobs", len(bs))
	}
	if b := h.blob(res.Blob.ID); b.State != meta.BlobCommitted {
		t.Fatalf("blob of held claim is %s", b.State)
	}
	h.wantActive(id)
	h.wantCounters("ns", counters{used: 100, active: 1})

	// Setting it again replaces the reason only.
	if err := h.s.SetClaimHold(h.ctx(), id, "case 43", h.now()); err != nil {
		t.Fatalf("SetClaimHold again: %v", err)
	}
	if hs, _ := h.s.ClaimHolds(h.ctx(), id); hs.Claim == nil || hs.Claim.Reason != "case 43" || !hs.Claim.At.Equal(epoch) {
		t.Fatalf("ClaimHolds after second set = %+v", hs.Claim)
	}

	// Lifting the hold finishes the overdue claim at once, with its reason.
	fr, finished, err := h.s.ClearClaimHold(h.ctx(), id, h.now())
	if err != nil || !finished {
		t.Fatalf("ClearClaimHold: finished=%v err=%v", finished, err)
	}
	if fr.Claim.DeleteReason != meta.ReasonReadRetention || !fr.BlobOrphaned {
		t.Errorf("finish on lift = %+v", fr)
	}
	if c := h.claim(id); c.State != meta.ClaimDeleted {
		t.Errorf("claim after lift is %s", c.State)
	}
	h.wantCounters("ns", counters{})
	// Lifting again changes nothing.
	if _, finished, err := h.s.ClearClaimHold(h.ctx(), id, h.now()); err != nil || finished {
		t.Fatalf("second ClearClaimHold: finished=%v err=%v", finished, err)
	}
}

func testHoldNamespace(t *testing.T, h *harness) {
	a := h.put(put{MaxAge: time.Hour})
	b := h.put(put{MaxAge: 3 * time.Hour})
	other := h.put(put{NS: "other", MaxAge: time.Hour})
	parked, err := h.s.SetNamespaceHold(h.ctx(), "ns", "audit", h.now())
	if err != nil || parked != 2 {
		t.Fatalf("SetNamespaceHold = %d, %v; want 2 parked", parked, err)
	}
	if hold, err := h.s.NamespaceHold(h.ctx(), "ns"); err != nil || hold == nil || hold.Reason != "audit" {
		t.Fatalf("NamespaceHold = %+v, %v", hold, err)
	}
	if hold, err := h.s.NamespaceHold(h.ctx(), "other"); err != nil || hold != nil {
		t.Fatalf("NamespaceHold(other) = %+v, %v", hold, err)
	}
	if hs, err := h.s.ClaimHolds(h.ctx(), a.Claim.ID); err != nil || hs.Namespace == nil || hs.Claim != nil || !hs.Held() {
		t.Fatalf("ClaimHolds under a namespace hold = %+v, %v", hs, err)
	}
	// A claim that becomes active after the hold is held too.
	late := h.put(put{MaxAge: time.Hour})

	h.clock.Advance(2 * time.Hour)
	rs := finishDue(t, h, 100)
	if ids := finishedIDs(rs); len(ids) != 1 || ids[0] != other.Claim.ID {
		t.Fatalf("FinishDueClaims finished %v, want only the claim of the other namespace", ids)
	}
	// The late claim was parked by that page: nothing is due any more.
	h.wantNothingDue()
	for _, id := range []string{a.Claim.ID, b.Claim.ID, late.Claim.ID} {
		if _, done := h.finish(id, meta.ReasonDeleted); done {
			t.Fatalf("FinishClaim finished %s of a held namespace", id)
		}
		h.wantActive(id)
	}
	// Pending claims are not held: an aborted put still finishes.
	cp := h.pending(put{})
	if _, done := h.finish(cp.Claim.ID, meta.ReasonAborted); !done {
		t.Fatal("a pending claim of a held namespace could not be aborted")
	}

	// Lifting finishes the overdue ones at once; b is not due yet.
	rs, err = h.s.ClearNamespaceHold(h.ctx(), "ns", h.now())
	if err != nil {
		t.Fatalf("ClearNamespaceHold: %v", err)
	}
	if got := len(rs); got != 2 {
		t.Fatalf("ClearNamespaceHold finished %v, want a and late", finishedIDs(rs))
	}
	h.wantActive(b.Claim.ID)
	h.clock.Advance(2 * time.Hour)
	if ids := finishedIDs(finishDue(t, h, 100)); len(ids) != 1 || ids[0] != b.Claim.ID {
		t.Fatalf("after the lift FinishDueClaims finished %v, want b", ids)
	}
	h.wantCounters("ns", counters{})
	if rs, err := h.s.ClearNamespaceHold(h.ctx(), "ns", h.now()); err != nil || len(rs) != 0 {
		t.Fatalf("second ClearNamespaceHold = %v, %v", rs, err)
	}
}

func testHoldClaimAndNamespace(t *testing.T, h *harness) {
	res := h.put(put{MaxAge: time.Hour})
	id := res.Claim.ID
	if err := h.s.SetClaimHold(h.ctx(), id, "claim", h.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.SetNamespaceHold(h.ctx(), "ns", "ns", h.now()); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(2 * time.Hour)
	// Either hold alone keeps the claim.
	if rs, err := h.s.ClearNamespaceHold(h.ctx(), "ns", h.now()); err != nil || len(rs) != 0 {
		t.Fatalf("ClearNamespaceHold = %v, %v; the claim hold must keep it", rs, err)
	}
	h.wantNothingDue()
	if _, err := h.s.SetNamespaceHold(h.ctx(), "ns", "ns", h.now()); err != nil {
		t.Fatal(err)
	}
	if _, finished, err := h.s.ClearClaimHold(h.ctx(), id, h.now()); err != nil || finished {
		t.Fatalf("ClearClaimHold = %v, %v; the namespace hold must keep it", finished, err)
	}
	h.wantNothingDue()
	h.wantActive(id)
	rs, err := h.s.ClearNamespaceHold(h.ctx(), "ns", h.now())
	if err != nil || len(rs) != 1 || rs[0].Claim.DeleteReason != meta.ReasonExpired {
		t.Fatalf("last lift = %v, %v; want the claim expired", rs, err)
	}
}

func testHoldConflicts(t *testing.T, h *harness) {
	wantErr(t, "SetClaimHold(unknown)", h.s.SetClaimHold(h.ctx(), "c_nope", "", h.now()), meta.ErrNotFound)
	if _, err := h.s.ClaimHolds(h.ctx(), "c_nope"); err == nil {
		t.Fatal("ClaimHolds(unknown): no error")
	}
	cp := h.pending(put{})
	wantErr(t, "SetClaimHold(pending)", h.s.SetClaimHold(h.ctx(), cp.Claim.ID, "", h.now()), meta.ErrConflict)
	gone := h.put(put{})
	h.finish(gone.Claim.ID, meta.ReasonDeleted)
	wantErr(t, "SetClaimHold(deleted)", h.s.SetClaimHold(h.ctx(), gone.Claim.ID, "", h.now()), meta.ErrConflict)
	due := h.put(put{MaxAge: time.Minute})
	h.clock.Advance(time.Hour)
	// Overdue and not yet finished: the caller finishes it first.
	wantErr(t, "SetClaimHold(due)", h.s.SetClaimHold(h.ctx(), due.Claim.ID, "", h.now()), meta.ErrConflict)
	h.finish(cp.Claim.ID, meta.ReasonAborted)
	finishDue(t, h, 100)
}

// testHoldConcurrentWithFinish races holds against explicit finishes of
// the same claims: whichever wins, a hold that was set must have kept its
// claim.
func testHoldConcurrentWithFinish(t *testing.T, h *harness) {
	const n = 40
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.put(put{NS: fmt.Sprintf("ns%d", i%2)}).Claim.ID
	}
	held := make([]bool, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			err := h.s.SetClaimHold(h.ctx(), id, "race", h.now())
			if err == nil {
				held[i] = true
			} else if !isConflict(err) {
				t.Errorf("SetClaimHold: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, _, err := h.s.FinishClaim(h.ctx(), id, meta.ReasonDeleted, h.now(), false); err != nil {
				t.Errorf("FinishClaim: %v", err)
			}
		}()
	}
	// And a namespace hold racing with finishes of its claims.
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := h.s.SetNamespaceHold(h.ctx(), "ns1", "race", h.now()); err != nil {
			t.Errorf("SetNamespaceHold: %v", err)
		}
	}()
	wg.Wait()
	for i, id := range ids {
		c := h.claim(id)
		if held[i] && c.State != meta.ClaimActive {
			t.Errorf("claim %s: hold was set, yet it is %s", id, c.State)
		}
		// The audit trail agrees with what happened: a hold_set exactly
		// when the hold was set (ADR 0070: never one without the other).
		want := 0
		if held[i] {
			want = 1
		}
		if n := strings.Count(strings.Join(h.claimEvents(id), " "), meta.EventHoldSet+"/"); n != want {
			t.Errorf("claim %s: held %v, yet %d hold_set events", id, held[i], n)
		}
		// Whatever survived in the held namespace stays.
		if c.State == meta.ClaimActive && c.Namespace == "ns1" {
			if _, done := h.finish(id, meta.ReasonDeleted); done {
				t.Errorf("claim %s of the held namespace was finished", id)
			}
		}
	}
	// Every claim still active is held one way or another; lift all.
	for _, id := range ids {
		if _, _, err := h.s.ClearClaimHold(h.ctx(), id, h.now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.s.ClearNamespaceHold(h.ctx(), "ns1", h.now()); err != nil {
		t.Fatal(err)
	}
}

func isConflict(err error) bool { return err != nil && errors.Is(err, meta.ErrConflict) }
