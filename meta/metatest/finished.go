package metatest

import (
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// testFinishedClaims: a namespace's finished_claims counter counts each
// claim once, whichever route finished it (expired and swept, deleted,
// released and swept, never confirmed), in the namespace it belonged to,
// and finishing a finished claim again counts nothing.
func testFinishedClaims(t *testing.T, h *harness) {
	wantFinished := func(ns string, want int64) {
		t.Helper()
		n, err := h.s.Namespace(h.ctx(), ns)
		if err != nil {
			t.Fatalf("Namespace(%s): %v", ns, err)
		}
		if n.FinishedClaims != want {
			t.Errorf("namespace %s FinishedClaims = %d, want %d", ns, n.FinishedClaims, want)
		}
	}
	wantFinished("fin", 0)
	h.put(put{NS: "fin", MaxAge: time.Minute}) // expires
	deleted := h.put(put{NS: "fin"})
	released := h.put(put{NS: "fin", Consumers: 1})
	h.pending(put{NS: "fin", UploadWithin: time.Minute}) // never confirmed
	h.put(put{NS: "other"})                              // stays live

	if _, done := h.finish(deleted.Claim.ID, meta.ReasonDeleted); !done {
		t.Fatalf("FinishClaim(%s) did not finish it", deleted.Claim.ID)
	}
	wantFinished("fin", 1)
	if _, done := h.finish(deleted.Claim.ID, meta.ReasonDeleted); done {
		t.Errorf("FinishClaim of a finished claim finished it again")
	}
	h.release(released.Claim.ID, "worker")
	h.clock.Advance(2 * time.Minute)
	res, err := h.s.FinishDueClaims(h.ctx(), h.now(), 100)
	if err != nil {
		t.Fatalf("FinishDueClaims: %v", err)
	}
	reasons := map[string]bool{}
	for _, r := range res {
		reasons[r.Claim.DeleteReason] = true
	}
	for _, want := range []string{meta.ReasonExpired, meta.ReasonReleased, meta.ReasonNeverConfirmed} {
		if !reasons[want] {
			t.Errorf("FinishDueClaims finished no claim as %s (got %v)", want, reasons)
		}
	}
	if len(res) != 3 {
		t.Fatalf("FinishDueClaims finished %d claims, want 3", len(res))
	}
	wantFinished("fin", 4)
	wantFinished("other", 0)
	// A second sweep finds nothing more and counts nothing.
	if res, err := h.s.FinishDueClaims(h.ctx(), h.now(), 100); err != nil || len(res) != 0 {
		t.Fatalf("second FinishDueClaims = %d claims, %v; want none", len(res), err)
	}
	wantFinished("fin", 4)
	got, err := h.s.Namespaces(h.ctx())
	if err != nil {
		t.Fatalf("Namespaces: %v", err)
	}
	for _, n := range got {
		if n.Name == "fin" && n.FinishedClaims != 4 {
			t.Errorf("Namespaces: fin FinishedClaims = %d, want 4", n.FinishedClaims)
		}
	}
}
