package metatest

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// orphan puts a claim and finishes it at once, leaving its blob orphaned
// with collect_at = now + grace.
func (h *harness) orphan(grace time.Duration) meta.Blob {
	h.t.Helper()
	res := h.put(put{Grace: grace})
	h.finish(res.Claim.ID, meta.ReasonDeleted)
	return h.blob(res.Blob.ID)
}

func testBeginCollectGraceOrderLimit(t *testing.T, h *harness) {
	b3 := h.orphan(3 * time.Hour)
	b1 := h.orphan(1 * time.Hour)
	b2 := h.orphan(2 * time.Hour)
	live := h.put(put{})

	h.clock.Set(epoch.Add(30 * time.Minute))
	if got := h.beginCollect(10, time.Minute); len(got) != 0 {
		t.Fatalf("BeginCollect inside the grace period = %v", blobIDs(got))
	}
	h.clock.Set(epoch.Add(3 * time.Hour))
	got := h.beginCollect(2, 10*time.Minute)
	if want := []string{b1.ID, b2.ID}; !slices.Equal(blobIDs(got), want) {
		t.Fatalf("BeginCollect(limit 2) = %v, want %v (oldest due first)", blobIDs(got), want)
	}
	for _, b := range got {
		if b.State != meta.BlobDeleting {
			t.Errorf("returned blob %s is %s, want deleting", b.ID, b.State)
		}
		wantTime(t, "returned CollectAt", b.CollectAt, h.now().Add(10*time.Minute))
		stored := h.blob(b.ID)
		if stored.State != meta.BlobDeleting || !stored.CollectAt.Equal(b.CollectAt) {
			t.Errorf("stored blob %s = %+v", b.ID, stored)
		}
	}
	got = h.beginCollect(10, 10*time.Minute)
	if want := []string{b3.ID}; !slices.Equal(blobIDs(got), want) {
		t.Errorf("BeginCollect = %v, want %v", blobIDs(got), want)
	}
	if b := h.blob(live.Blob.ID); b.State != meta.BlobCommitted {
		t.Errorf("live blob is %s", b.State)
	}
}

func testBeginCollectReconfirms(t *testing.T, h *harness) {
	// The staging blob of a pending claim comes due with the claim; if the
	// blob's turn comes before the claim is finished, the claim still
	// references it and it must not be collected.
	cp := h.pending(put{UploadWithin: time.Hour})
	d := digestOf("shared")
	shared := h.put(put{Digest: d, Dedup: true, Grace: 0})
	other := h.put(put{Digest: d, Dedup: true})
	h.finish(shared.Claim.ID, meta.ReasonDeleted) // the blob keeps one live claim

	h.clock.Set(epoch.Add(time.Hour))
	for _, b := range h.beginCollect(100, time.Minute) {
		if b.ID == cp.Blob.ID || b.ID == shared.Blob.ID {
			t.Fatalf("BeginCollect returned blob %s, which a live claim references", b.ID)
		}
	}
	if b := h.blob(cp.Blob.ID); b.State != meta.BlobStaging {
		t.Errorf("referenced staging blob is %s, want staging", b.State)
	}
	if b := h.blob(shared.Blob.ID); b.State != meta.BlobCommitted {
		t.Errorf("referenced shared blob is %s, want committed", b.State)
	}

	// Once the claim is finished, the blob goes.
	if rs := finishDue(t, h, 10); len(rs) != 1 || rs[0].Claim.ID != cp.Claim.ID {
		t.Fatalf("FinishDueClaims = %v, want the pending claim", finishedIDs(rs))
	}
	got := h.beginCollect(100, time.Minute)
	if !slices.Contains(blobIDs(got), cp.Blob.ID) {
		t.Errorf("BeginCollect after the claim finished = %v, want %s", blobIDs(got), cp.Blob.ID)
	}
	if c := h.claim(other.Claim.ID); c.State != meta.ClaimActive {
		t.Errorf("claim %s is %s", other.Claim.ID, c.State)
	}
}

func testBeginCollectRetriesDeleting(t *testing.T, h *harness) {
	b := h.orphan(0)
	got := h.beginCollect(10, 10*time.Minute)
	if !slices.Equal(blobIDs(got), []string{b.ID}) {
		t.Fatalf("BeginCollect = %v, want %s", blobIDs(got), b.ID)
	}
	// The collector died: nothing until the retry time, then the blob again.
	if got := h.beginCollect(10, 10*time.Minute); len(got) != 0 {
		t.Errorf("BeginCollect before the retry time = %v", blobIDs(got))
	}
	h.clock.Advance(10*time.Minute - time.Nanosecond)
	if got := h.beginCollect(10, 10*time.Minute); len(got) != 0 {
		t.Errorf("BeginCollect just before the retry time = %v", blobIDs(got))
	}
	h.clock.Advance(time.Nanosecond)
	got = h.beginCollect(10, 10*time.Minute)
	if !slices.Equal(blobIDs(got), []string{b.ID}) {
		t.Fatalf("BeginCollect at the retry time = %v, want %s", blobIDs(got), b.ID)
	}
	if got[0].State != meta.BlobDeleting {
		t.Errorf("retried blob is %s", got[0].State)
	}
	wantTime(t, "retried CollectAt", got[0].CollectAt, h.now().Add(10*time.Minute))
}

func testFinishCollect(t *testing.T, h *harness) {
	b1, b2 := h.orphan(0), h.orphan(0)
	live := h.put(put{})
	if got := h.beginCollect(10, time.Minute); len(got) != 2 {
		t.Fatalf("BeginCollect = %v, want 2 blobs", blobIDs(got))
	}
	// Block tables (ADR 0257) follow the object: saved, read, replaced,
	// and gone with the collected blob's object only.
	for _, k := range []string{b1.Key, live.Blob.Key} {
		if err := h.s.SaveBlockTable(h.ctx(), k, []byte("old")); err != nil {
			t.Fatalf("SaveBlockTable: %v", err)
		}
		if err := h.s.SaveBlockTable(h.ctx(), k, []byte{1, 2, 3}); err != nil {
			t.Fatalf("SaveBlockTable again: %v", err)
		}
	}
	if table, ok, err := h.s.BlockTable(h.ctx(), live.Blob.Key); err != nil || !ok || !slices.Equal(table, []byte{1, 2, 3}) {
		t.Fatalf("BlockTable = %v, %v, %v; want the table saved last", table, ok, err)
	}
	if _, ok, err := h.s.BlockTable(h.ctx(), "no/such/object"); err != nil || ok {
		t.Fatalf("BlockTable of an object without one = %v, %v", ok, err)
	}
	h.clock.Advance(time.Second)
	if err := h.s.FinishCollect(h.ctx(), []string{b1.ID, live.Blob.ID, "b_missing"}, h.now()); err != nil {
		t.Fatalf("FinishCollect: %v", err)
	}
	if _, ok, err := h.s.BlockTable(h.ctx(), b1.Key); err != nil || ok {
		t.Errorf("block table of a collected object: ok %v, %v", ok, err)
	}
	if _, ok, err := h.s.BlockTable(h.ctx(), live.Blob.Key); err != nil || !ok {
		t.Errorf("block table of a live object after FinishCollect of others: ok %v, %v", ok, err)
	}
	b := h.blob(b1.ID)
	if b.State != meta.BlobDeleted || !b.CollectAt.IsZero() {
		t.Errorf("collected blob = %+v, want deleted without collect_at", b)
	}
	wantTime(t, "deleted StateAt", b.StateAt, h.now())
	if b := h.blob(live.Blob.ID); b.State != meta.BlobCommitted {
		t.Errorf("FinishCollect changed a committed blob to %s", b.State)
	}
	if b := h.blob(b2.ID); b.State != meta.BlobDeleting {
		t.Errorf("blob not named is %s, want deleting", b.State)
	}
	h.clock.Advance(time.Hour)
	if got := h.beginCollect(10, time.Minute); !slices.Equal(blobIDs(got), []string{b2.ID}) {
		t.Errorf("BeginCollect = %v, want only %s", blobIDs(got), b2.ID)
	}
	if err := h.s.FinishCollect(h.ctx(), nil, h.now()); err != nil {
		t.Errorf("FinishCollect(nil): %v", err)
	}
}

func testCollectFailed(t *testing.T, h *harness) {
	b := h.orphan(0)
	h.beginCollect(10, time.Minute)
	retryAt := h.now().Add(5 * time.Minute)
	if err := h.s.CollectFailed(h.ctx(), b.ID, "access denied", retryAt); err != nil {
		t.Fatalf("CollectFailed: %v", err)
	}
	got := h.blob(b.ID)
	if got.State != meta.BlobDeleting || got.Attempts != 1 || got.LastError != "access denied" {
		t.Errorf("blob after failure = %+v", got)
	}
	wantTime(t, "CollectAt after failure", got.CollectAt, retryAt)

	h.clock.Set(retryAt.Add(-time.Second))
	if bs := h.beginCollect(10, time.Minute); len(bs) != 0 {
		t.Errorf("BeginCollect before retryAt = %v", blobIDs(bs))
	}
	h.clock.Set(retryAt)
	if bs := h.beginCollect(10, time.Minute); !slices.Equal(blobIDs(bs), []string{b.ID}) {
		t.Errorf("BeginCollect at retryAt = %v, want %s", blobIDs(bs), b.ID)
	}
	if err := h.s.CollectFailed(h.ctx(), b.ID, "timeout", h.now().Add(time.Hour)); err != nil {
		t.Fatalf("CollectFailed: %v", err)
	}
	if got := h.blob(b.ID); got.Attempts != 2 || got.LastError != "timeout" {
		t.Errorf("blob after second failure = %+v", got)
	}

	err := h.s.CollectFailed(h.ctx(), "b_missing", "x", h.now())
	wantErr(t, "CollectFailed of unknown blob", err, meta.ErrNotFound)

	// Only a deleting blob takes a failure: a committed one stays as it is.
	live := h.put(put{})
	_ = h.s.CollectFailed(h.ctx(), live.Blob.ID, "x", h.now())
	if got := h.blob(live.Blob.ID); got.State != meta.BlobCommitted || got.Attempts != 0 || !got.CollectAt.IsZero() {
		t.Errorf("CollectFailed changed a committed blob: %+v", got)
	}
}

func testOldestDue(t *testing.T, h *harness) {
	oldest := func() time.Time {
		t.Helper()
		ts, err := h.s.OldestDue(h.ctx())
		if err != nil {
			t.Fatalf("OldestDue: %v", err)
		}
		return ts
	}
	if got := oldest(); !got.IsZero() {
		t.Errorf("OldestDue of an empty store = %v, want zero", got)
	}
	p := put{MaxAge: 24 * time.Hour}.withDefaults()
	cp := h.pending(p) // claim and staging blob due in 1h
	wantTime(t, "OldestDue with a pending put", oldest(), epoch.Add(time.Hour))
	h.commit(cp, p)
	wantTime(t, "OldestDue after commit", oldest(), epoch.Add(24*time.Hour))

	h.clock.Advance(time.Minute)
	b := h.orphan(2 * time.Hour)
	wantTime(t, "OldestDue with an orphan", oldest(), b.CollectAt)
	h.clock.Set(b.CollectAt)
	bs := h.beginCollect(10, time.Minute)
	wantTime(t, "OldestDue with a deleting blob", oldest(), h.now().Add(time.Minute))
	if err := h.s.FinishCollect(h.ctx(), blobIDs(bs), h.now()); err != nil {
		t.Fatal(err)
	}
	wantTime(t, "OldestDue after collection", oldest(), epoch.Add(24*time.Hour))
}

func testDueBacklog(t *testing.T, h *harness) {
	last := meta.DueBacklog{}
	backlog := func(bound int) int64 {
		t.Helper()
		d, err := h.s.DueBacklog(h.ctx(), h.now(), bound)
		if err != nil {
			t.Fatalf("DueBacklog: %v", err)
		}
		last = d
		return d.Total
	}
	if got := backlog(100); got != 0 {
		t.Errorf("DueBacklog of an empty store = %d, want 0", got)
	}
	p := put{MaxAge: time.Hour}.withDefaults()
	for range 3 {
		h.commit(h.pending(p), p) // due at epoch+1h
	}
	if got := backlog(100); got != 0 {
		t.Errorf("DueBacklog before the deadlines = %d, want 0", got)
	}
	h.clock.Advance(time.Hour)
	h.put(put{NS: "later", MaxAge: 30 * time.Minute}) // due after the others
	if got := backlog(100); got != 3 {
		t.Errorf("DueBacklog at the deadlines = %d, want the 3 claims", got)
	}
	if !maps.Equal(last.ByNamespace, map[string]int64{p.NS: 3}) || last.ClaimsCapped {
		t.Errorf("DueBacklog by namespace = %v (capped %v), want %s: 3, not capped", last.ByNamespace, last.ClaimsCapped, p.NS)
	}
	if got := backlog(2); got != 2 {
		t.Errorf("DueBacklog bounded by 2 = %d, want 2", got)
	}
	if !maps.Equal(last.ByNamespace, map[string]int64{p.NS: 2}) || !last.ClaimsCapped {
		t.Errorf("DueBacklog by namespace bounded by 2 = %v (capped %v), want %s: 2, capped", last.ByNamespace, last.ClaimsCapped, p.NS)
	}
	h.clock.Advance(time.Hour)
	backlog(3) // the first 3 by due time are the earlier namespace's
	if !maps.Equal(last.ByNamespace, map[string]int64{p.NS: 3}) || !last.ClaimsCapped {
		t.Errorf("DueBacklog by namespace bounded by 3 = %v (capped %v), want the 3 earliest, capped", last.ByNamespace, last.ClaimsCapped)
	}
	if backlog(100); !maps.Equal(last.ByNamespace, map[string]int64{p.NS: 3, "later": 1}) {
		t.Errorf("DueBacklog by namespace = %v, want %s: 3, later: 1", last.ByNamespace, p.NS)
	}
	b := h.orphan(time.Minute)
	h.clock.Set(b.CollectAt)
	if got := backlog(100); got != 5 {
		t.Errorf("DueBacklog with a due orphan blob = %d, want 5", got)
	}
}

func testNotFound(t *testing.T, h *harness) {
	_, err := h.s.Claim(h.ctx(), "c_missing")
	wantErr(t, "Claim", err, meta.ErrNotFound)
	_, err = h.s.Blob(h.ctx(), "b_missing")
	wantErr(t, "Blob", err, meta.ErrNotFound)
	_, _, err = h.s.FinishClaim(h.ctx(), "c_missing", meta.ReasonDeleted, h.now(), false)
	wantErr(t, "FinishClaim", err, meta.ErrNotFound)
	n, err := h.s.Namespace(h.ctx(), "never-used")
	if err != nil || n != (meta.Namespace{Name: "never-used"}) {
		t.Errorf("Namespace of an unused name = %+v, %v; want zero counters", n, err)
	}
}

func testPing(t *testing.T, h *harness) {
	if err := h.s.Ping(h.ctx()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}
