package metatest

import (
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

func finishDue(t *testing.T, h *harness, limit int) []meta.FinishResult {
	t.Helper()
	rs, err := h.s.FinishDueClaims(h.ctx(), h.now(), limit)
	if err != nil {
		t.Fatalf("FinishDueClaims: %v", err)
	}
	return rs
}

func finishedIDs(rs []meta.FinishResult) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.Claim.ID
	}
	return ids
}

func testFinishActive(t *testing.T, h *harness) {
	res := h.put(put{Size: 100, Grace: time.Hour})
	h.clock.Advance(time.Minute)
	fr, done := h.finish(res.Claim.ID, meta.ReasonDeleted)
	if !done || fr.PreviousState != meta.ClaimActive || !fr.BlobOrphaned {
		t.Fatalf("finish: done=%v PreviousState=%s BlobOrphaned=%v", done, fr.PreviousState, fr.BlobOrphaned)
	}
	for _, c := range []meta.Claim{fr.Claim, h.claim(res.Claim.ID)} {
		if c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonDeleted || !c.DueAt.IsZero() {
			t.Errorf("finished claim = %+v", c)
		}
		wantTime(t, "DeletedAt", c.DeletedAt, epoch.Add(time.Minute))
	}
	b := h.blob(res.Blob.ID)
	if b.State != meta.BlobOrphaned || b.Refcount != 0 {
		t.Errorf("blob of finished claim = %+v, want orphaned with refcount 0", b)
	}
	wantTime(t, "orphan CollectAt", b.CollectAt, epoch.Add(time.Minute+time.Hour))
	h.wantCounters("ns", counters{})

	// Idempotent: a second finish changes nothing.
	h.clock.Advance(time.Minute)
	fr, done = h.finish(res.Claim.ID, meta.ReasonExpired)
	if done {
		t.Errorf("second finish reported done")
	}
	if c := h.claim(res.Claim.ID); c.DeleteReason != meta.ReasonDeleted || !c.DeletedAt.Equal(epoch.Add(time.Minute)) {
		t.Errorf("second finish changed the claim: %+v", c)
	}
	wantTime(t, "orphan CollectAt after second finish", h.blob(res.Blob.ID).CollectAt, epoch.Add(time.Minute+time.Hour))
	h.wantCounters("ns", counters{})
	_ = fr
}

func testFinishPending(t *testing.T, h *harness) {
	h.put(put{Size: 50})
	cp := h.pending(put{Reserve: 100, Grace: time.Hour})
	h.clock.Advance(time.Minute)
	fr, done := h.finish(cp.Claim.ID, meta.ReasonAborted)
	if !done || fr.PreviousState != meta.ClaimPending || !fr.BlobOrphaned || fr.Claim.DeleteReason != meta.ReasonAborted {
		t.Fatalf("finish pending: done=%v %+v", done, fr)
	}
	b := h.blob(cp.Blob.ID)
	if b.State != meta.BlobOrphaned {
		t.Errorf("staging blob of finished claim is %s, want orphaned", b.State)
	}
	// An upload that never completed has nothing to wait for.
	wantTime(t, "staging orphan CollectAt", b.CollectAt, h.now())
	h.wantCounters("ns", counters{used: 50, active: 1})
	if _, done := h.finish(cp.Claim.ID, meta.ReasonAborted); done {
		t.Errorf("second finish of pending claim reported done")
	}
	h.wantCounters("ns", counters{used: 50, active: 1})
}

func testFinishOnlyIfDue(t *testing.T, h *harness) {
	res := h.put(put{MaxAge: time.Hour})
	cp := h.pending(put{UploadWithin: 30 * time.Minute})

	h.clock.Advance(29 * time.Minute)
	for _, id := range []string{res.Claim.ID, cp.Claim.ID} {
		_, done, err := h.s.FinishClaim(h.ctx(), id, meta.ReasonDeleted, h.now(), true)
		if err != nil || done {
			t.Fatalf("FinishClaim(onlyIfDue) before due: done=%v err=%v", done, err)
		}
	}
	h.wantCounters("ns", counters{used: 100, reserved: 100, active: 1, pending: 1})

	h.clock.Advance(time.Minute) // exactly at the pending claim's due time
	fr, done, err := h.s.FinishClaim(h.ctx(), cp.Claim.ID, meta.ReasonDeleted, h.now(), true)
	if err != nil || !done || fr.Claim.DeleteReason != meta.ReasonNeverConfirmed {
		t.Fatalf("FinishClaim(onlyIfDue) of due pending claim: done=%v reason=%q err=%v", done, fr.Claim.DeleteReason, err)
	}
	h.clock.Advance(time.Hour)
	fr, done, err = h.s.FinishClaim(h.ctx(), res.Claim.ID, meta.ReasonDeleted, h.now(), true)
	if err != nil || !done || fr.Claim.DeleteReason != meta.ReasonExpired {
		t.Fatalf("FinishClaim(onlyIfDue) of due claim: done=%v reason=%q err=%v", done, fr.Claim.DeleteReason, err)
	}
	h.wantCounters("ns", counters{})
}

func testFinishSharedBlob(t *testing.T, h *harness) {
	d := digestOf("shared")
	a := h.put(put{Digest: d, Dedup: true, Grace: time.Hour})
	b := h.put(put{Digest: d, Dedup: true, Grace: 2 * time.Hour})
	if b.Blob.ID != a.Blob.ID {
		t.Fatalf("setup: no dedup")
	}
	fr, _ := h.finish(a.Claim.ID, meta.ReasonReleased)
	if fr.BlobOrphaned {
		t.Errorf("finishing one of two claims orphaned the blob")
	}
	if bl := h.blob(a.Blob.ID); bl.State != meta.BlobCommitted || bl.Refcount != 1 || !bl.CollectAt.IsZero() {
		t.Errorf("shared blob after first finish = %+v, want committed with refcount 1", bl)
	}
	h.clock.Advance(time.Minute)
	fr, _ = h.finish(b.Claim.ID, meta.ReasonReleased)
	if !fr.BlobOrphaned {
		t.Errorf("finishing the last claim did not orphan the blob")
	}
	bl := h.blob(a.Blob.ID)
	if bl.State != meta.BlobOrphaned {
		t.Errorf("shared blob after last finish is %s, want orphaned", bl.State)
	}
	wantTime(t, "CollectAt (last claim's grace)", bl.CollectAt, h.now().Add(2*time.Hour))
	h.wantCounters("ns", counters{})
}

func testFinishDueClaims(t *testing.T, h *harness) {
	c1 := h.put(put{MaxAge: 1 * time.Minute})
	c2 := h.put(put{MaxAge: 2 * time.Minute})
	c3 := h.put(put{MaxAge: 3 * time.Minute})
	c4 := h.put(put{MaxAge: 10 * time.Minute})
	p1 := h.pending(put{UploadWithin: 150 * time.Second, Reserve: 70})
	h.wantCounters("ns", counters{used: 400, reserved: 70, active: 4, pending: 1})

	h.clock.Set(epoch.Add(3 * time.Minute))
	rs := finishDue(t, h, 2)
	if got, want := finishedIDs(rs), []string{c1.Claim.ID, c2.Claim.ID}; !slices.Equal(got, want) {
		t.Fatalf("first page = %v, want %v (oldest due first, limit 2)", got, want)
	}
	for _, r := range rs {
		if r.PreviousState != meta.ClaimActive || r.Claim.State != meta.ClaimDeleted ||
			r.Claim.DeleteReason != meta.ReasonExpired || !r.BlobOrphaned {
			t.Errorf("finished %+v", r)
		}
	}
	h.wantCounters("ns", counters{used: 200, reserved: 70, active: 2, pending: 1})

	rs = finishDue(t, h, 10)
	if got, want := finishedIDs(rs), []string{p1.Claim.ID, c3.Claim.ID}; !slices.Equal(got, want) {
		t.Fatalf("second page = %v, want %v (due at or before now, in due order)", got, want)
	}
	if rs[0].PreviousState != meta.ClaimPending || rs[0].Claim.DeleteReason != meta.ReasonNeverConfirmed {
		t.Errorf("finished pending claim: %+v", rs[0])
	}
	if rs := finishDue(t, h, 10); len(rs) != 0 {
		t.Errorf("third page = %v, want nothing due", finishedIDs(rs))
	}
	if c := h.claim(c4.Claim.ID); c.State != meta.ClaimActive {
		t.Errorf("claim not yet due is %s", c.State)
	}
	h.wantCounters("ns", counters{used: 100, active: 1})
	if b := h.blob(p1.Blob.ID); b.State != meta.BlobOrphaned {
		t.Errorf("staging blob of reaped claim is %s, want orphaned", b.State)
	}
}

func testFinishDueClaimsSharedBlob(t *testing.T, h *harness) {
	d := digestOf("shared")
	x := h.put(put{Digest: d, Dedup: true, MaxAge: time.Minute, Grace: time.Hour})
	h.put(put{Digest: d, Dedup: true, MaxAge: time.Minute, Grace: time.Hour})
	z := h.put(put{Digest: d, Dedup: true, MaxAge: time.Hour, Grace: time.Hour})

	h.clock.Set(epoch.Add(time.Minute))
	rs := finishDue(t, h, 100)
	if len(rs) != 2 {
		t.Fatalf("finished %d claims, want 2", len(rs))
	}
	for _, r := range rs {
		if r.BlobOrphaned {
			t.Errorf("blob orphaned while claim %s still holds it", z.Claim.ID)
		}
	}
	if b := h.blob(x.Blob.ID); b.State != meta.BlobCommitted || b.Refcount != 1 {
		t.Errorf("shared blob = %+v, want committed with refcount 1", b)
	}

	// Two claims of one blob in the same page: orphaned once.
	d2 := digestOf("pair")
	p := h.put(put{Digest: d2, Dedup: true, MaxAge: 2 * time.Minute, Grace: time.Hour})
	h.put(put{Digest: d2, Dedup: true, MaxAge: 2 * time.Minute, Grace: time.Hour})
	h.clock.Set(epoch.Add(time.Hour))
	rs = finishDue(t, h, 100)
	if len(rs) != 3 {
		t.Fatalf("finished %d claims, want 3", len(rs))
	}
	orphaned := 0
	for _, r := range rs {
		if r.BlobOrphaned {
			orphaned++
		}
	}
	if orphaned != 2 {
		t.Errorf("%d results report an orphaned blob, want 2 (one per blob)", orphaned)
	}
	for _, id := range []string{x.Blob.ID, p.Blob.ID} {
		b := h.blob(id)
		if b.State != meta.BlobOrphaned {
			t.Errorf("blob %s is %s, want orphaned", id, b.State)
		}
		wantTime(t, "CollectAt", b.CollectAt, h.now().Add(time.Hour))
	}
	h.wantCounters("ns", counters{})
}
