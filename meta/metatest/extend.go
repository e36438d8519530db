package metatest

import (
	"errors"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// testExtendPending: a put still receiving its body pushes its claim's
// due time and its staging blob's collect time forward, never back; the
// claim is then not finished at the old deadline; once it is no longer
// pending the call is a conflict.
func testExtendPending(t *testing.T, h *harness) {
	p := put{Size: 10, Reserve: 10}.withDefaults()
	cp := h.pending(p)
	later := epoch.Add(3 * time.Hour)
	if err := h.s.ExtendPending(h.ctx(), cp.Claim.ID, cp.Blob.ID, later); err != nil {
		t.Fatal(err)
	}
	wantTime(t, "extended DueAt", h.claim(cp.Claim.ID).DueAt, later)
	wantTime(t, "extended CollectAt", h.blob(cp.Blob.ID).CollectAt, later)
	// Never lowered.
	if err := h.s.ExtendPending(h.ctx(), cp.Claim.ID, cp.Blob.ID, epoch.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	wantTime(t, "DueAt after an earlier extension", h.claim(cp.Claim.ID).DueAt, later)
	// Not due at the first deadline any more.
	h.clock.Advance(2 * time.Hour)
	res, err := h.s.FinishDueClaims(h.ctx(), h.clock.Now(), 100)
	if err != nil || len(res) != 0 {
		t.Fatalf("FinishDueClaims before the extended deadline: %d finished, %v", len(res), err)
	}
	if c := h.claim(cp.Claim.ID); c.State != meta.ClaimPending {
		t.Fatalf("claim %s after its first deadline: %s", c.ID, c.State)
	}
	h.commit(cp, p)
	if err := h.s.ExtendPending(h.ctx(), cp.Claim.ID, cp.Blob.ID, later.Add(time.Hour)); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("ExtendPending of a committed claim = %v, want ErrConflict", err)
	}
	if err := h.s.ExtendPending(h.ctx(), "cc_AAAAAAAAAAAAAAAAAAAAAA", cp.Blob.ID, later); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("ExtendPending of an unknown claim = %v, want ErrNotFound", err)
	}
}
