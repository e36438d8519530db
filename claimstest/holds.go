package claimstest

import (
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Legal holds (claimcheck.Admin): while a claim or its namespace is on
// hold, nothing deletes it; lifting the last hold finishes an overdue
// claim at once.

func (e *env) holder(t *testing.T) claimcheck.Admin {
	t.Helper()
	h, ok := e.c().(claimcheck.Admin)
	if !ok {
		t.Skip("the implementation does not offer claimcheck.Admin")
	}
	return h
}

// testHolds: claim and namespace holds refuse deletes, outlive max_age
// and a sweep, show in Stat, and each keeps the claim until it is lifted.
func testHolds(t *testing.T, e *env) {
	e.start(t)
	h := e.holder(t)
	ctx := t.Context()
	data := JSONDoc(8<<10, 30)
	ref := e.put(t, "short", data, claimcheck.PutOptions{})
	other := e.put(t, "short", JSONDoc(9<<10, 31), claimcheck.PutOptions{})

	since := e.now()
	if err := h.SetHold(ctx, ref, "case 42"); err != nil {
		t.Fatalf("SetHold: %v", err)
	}
	wantErr(t, "delete of a held claim", e.c().Delete(ctx, ref), claimcheck.ErrHeld)
	info := e.stat(t, ref)
	if len(info.Holds) != 1 || info.Holds[0].Reason != "case 42" || info.Holds[0].Scope != claimcheck.HoldScopeClaim || info.State != claimcheck.StateActive {
		t.Fatalf("stat of a held claim: %+v", info)
	}
	wantTime(t, "hold since", info.Holds[0].Since, since)

	if err := h.SetNamespaceHold(ctx, "short", "audit"); err != nil {
		t.Fatalf("SetNamespaceHold: %v", err)
	}
	hold, err := h.NamespaceHold(ctx, "short")
	if err != nil || hold == nil || hold.Reason != "audit" || hold.Scope != claimcheck.HoldScopeNamespace {
		t.Fatalf("NamespaceHold = %+v, %v", hold, err)
	}
	if info := e.stat(t, other); len(info.Holds) != 1 || info.Holds[0].Scope != claimcheck.HoldScopeNamespace {
		t.Fatalf("stat of a claim in a held namespace: %+v", info.Holds)
	}
	wantErr(t, "delete in a held namespace", e.c().Delete(ctx, other), claimcheck.ErrHeld)

	e.advance(2 * time.Hour) // past max_age of "short"
	e.sweep(t)
	e.wantRedeem(t, ref, data)

	if err := h.ClearNamespaceHold(ctx, "short"); err != nil {
		t.Fatalf("ClearNamespaceHold: %v", err)
	}
	_, err = e.redeem(t, other)
	wantGone(t, "after the namespace hold is lifted", err, claimcheck.ReasonExpired)
	e.wantRedeem(t, ref, data) // the claim's own hold still keeps it
	if err := h.ClearHold(ctx, ref); err != nil {
		t.Fatalf("ClearHold: %v", err)
	}
	_, err = e.redeem(t, ref)
	wantGone(t, "after the last hold is lifted", err, claimcheck.ReasonExpired)
	if hold, err := h.NamespaceHold(ctx, "short"); err != nil || hold != nil {
		t.Fatalf("NamespaceHold after the lift = %+v, %v", hold, err)
	}
	// Lifting holds that are not set is not an error.
	if err := h.ClearNamespaceHold(ctx, "short"); err != nil {
		t.Errorf("second ClearNamespaceHold: %v", err)
	}
	if err := h.ClearNamespaceHold(ctx, "dar"); err != nil {
		t.Errorf("ClearNamespaceHold of a namespace never held: %v", err)
	}
}

// testHoldErrors: only active claims can be held.
func testHoldErrors(t *testing.T, e *env) {
	e.start(t)
	h := e.holder(t)
	ctx := t.Context()
	ref := e.put(t, "keep", JSONDoc(1024, 32), claimcheck.PutOptions{})
	if err := e.c().Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	wantGone(t, "hold of a deleted claim", h.SetHold(ctx, ref, ""), claimcheck.ReasonDeleted)
	wantErr(t, "hold of an unknown claim", h.SetHold(ctx, claimcheck.Ref{ID: unknownID}, ""), claimcheck.ErrNotFound)
	// An overdue claim is finished by the attempt, not revived by it.
	late := e.put(t, "keep", JSONDoc(2048, 33), claimcheck.PutOptions{})
	e.advance(25 * time.Hour)
	wantGone(t, "hold of an overdue claim", h.SetHold(ctx, late, ""), claimcheck.ReasonExpired)
	if hold, err := h.NamespaceHold(ctx, "keep"); err != nil || hold != nil {
		t.Fatalf("NamespaceHold without a hold = %+v, %v", hold, err)
	}
	wantErr(t, "hold of a malformed namespace", h.SetNamespaceHold(ctx, "Not/A/Namespace", ""), claimcheck.ErrInvalidArgument)
}

// testHoldKeepsDeadlines: a hold keeps a claim past the end of its
// release window and of its redelivery window; lifting it finishes the
// claim with the reason it was due for.
func testHoldKeepsDeadlines(t *testing.T, e *env) {
	e.start(t)
	h := e.holder(t)
	ctx := t.Context()
	data := JSONDoc(4<<10, 34)
	released := e.put(t, "keep", data, claimcheck.PutOptions{})
	read := e.put(t, "dar", data, claimcheck.PutOptions{})
	for _, ref := range []claimcheck.Ref{released, read} {
		if err := h.SetHold(ctx, ref, "case 7"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c().Release(ctx, released, "billing"); err != nil {
		t.Fatal(err)
	}
	e.wantRedeem(t, read, data)
	e.advance(10 * time.Minute)
	e.sweep(t)
	// An ack after the deadline is accepted while held.
	if err := e.c().Release(ctx, released, "billing"); err != nil {
		t.Fatalf("second release of a held claim: %v", err)
	}
	e.wantRedeem(t, released, data)
	e.wantRedeem(t, read, data)
	for ref, reason := range map[claimcheck.Ref]claimcheck.GoneReason{released: claimcheck.ReasonReleased, read: claimcheck.ReasonReadRetention} {
		if err := h.ClearHold(ctx, ref); err != nil {
			t.Fatal(err)
		}
		_, err := e.redeem(t, ref)
		wantGone(t, "redeem after the lift", err, reason)
	}
}
