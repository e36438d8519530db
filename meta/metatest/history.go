package metatest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// forget stops tracking pruned rows, so the invariant check at the end
// does not look for them.
func (h *harness) forget(ids ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	drop := func(id string) bool { return slices.Contains(ids, id) }
	h.claims = slices.DeleteFunc(h.claims, drop)
	h.blobs = slices.DeleteFunc(h.blobs, drop)
}

func (h *harness) pruneHistory(before time.Time, limit int) meta.PruneResult {
	h.t.Helper()
	res, err := h.s.PruneHistory(h.ctx(), before, limit)
	if err != nil {
		h.t.Fatalf("PruneHistory: %v", err)
	}
	return res
}

func (h *harness) wantClaimGone(id string) {
	h.t.Helper()
	if _, err := h.s.Claim(h.ctx(), id); !errors.Is(err, meta.ErrNotFound) {
		h.t.Errorf("Claim(%s) after pruning = %v, want ErrNotFound", id, err)
	}
}

// testPruneHistoryLeases: a lease that expired before the cut (its
// holder died) goes with the history; one that is live, or that expired
// after the cut, stays.
func testPruneHistoryLeases(t *testing.T, h *harness) {
	ctx := h.ctx()
	take := h.takeLease
	start := h.now()
	take("upload:dead", "crashed", time.Minute)
	take("upload:late", "crashed", 3*time.Hour)
	take("sweeper", "runner", 10*time.Hour)
	h.clock.Advance(4 * time.Hour)
	take("upload:live", "running", time.Minute)
	cut := h.now().Add(-2 * time.Hour)
	h.pruneHistory(cut, 10)

	// Read as of its start, a pruned lease's row would still show its
	// holder; gone, it shows none. The kept ones still show theirs.
	if held, _, err := h.s.CheckLease(ctx, "upload:dead", "crashed", start); err != nil || held {
		t.Errorf("a lease that expired before the cut must be pruned: CheckLease as of its start = %v, %v", held, err)
	}
	if held, _, err := h.s.CheckLease(ctx, "upload:late", "crashed", cut); err != nil || !held {
		t.Errorf("a lease that expired after the cut must be kept: CheckLease at the cut = %v, %v", held, err)
	}
	for _, l := range []struct{ name, holder string }{{"upload:live", "running"}, {"sweeper", "runner"}} {
		if held, _, err := h.s.CheckLease(ctx, l.name, l.holder, h.now()); err != nil || !held {
			t.Errorf("CheckLease(%s, %s) after pruning = %v, %v; want held", l.name, l.holder, held, err)
		}
	}
}

// testPruneHistory: finished claims older than the cut go with their
// releases and upload rows, oldest first and at most limit per call;
// collected blobs go once no claim row points at them; live rows, newer
// finished ones and blobs that are not deleted stay.
func testPruneHistory(t *testing.T, h *harness) {
	// Finished and collected at epoch: claim and blob both go.
	gone := h.put(put{})
	h.finish(gone.Claim.ID, meta.ReasonDeleted)
	collected := h.beginCollect(10, time.Minute)
	if len(collected) != 1 || collected[0].ID != gone.Blob.ID {
		t.Fatalf("BeginCollect = %v, want the finished claim's blob", blobIDs(collected))
	}
	if err := h.s.FinishCollect(h.ctx(), []string{gone.Blob.ID}, h.now()); err != nil {
		t.Fatal(err)
	}
	// Released by one of two consumers, then deleted: its release row goes too.
	released := h.put(put{Consumers: 2, Grace: time.Hour})
	h.release(released.Claim.ID, "billing")
	h.finish(released.Claim.ID, meta.ReasonDeleted)
	// A direct upload, confirmed and finished: its upload row goes too.
	cp := h.pending(put{Grace: time.Hour})
	u := uploadOf(cp, "k1")
	if _, _, err := h.s.CreateUpload(h.ctx(), u); err != nil {
		t.Fatal(err)
	}
	uploaded := h.commit(cp, put{Size: u.Size, Digest: u.Digest, Grace: time.Hour})
	h.finish(uploaded.Claim.ID, meta.ReasonDeleted)
	// Two claims share a blob; the finished one goes, the blob stays
	// committed for the live one.
	shared := put{Dedup: true}.withDefaults() // one digest for both
	first := h.put(shared)
	second := h.put(shared)
	if second.Blob.ID != first.Blob.ID {
		t.Fatalf("second put of the same digest got blob %s, want %s", second.Blob.ID, first.Blob.ID)
	}
	h.finish(first.Claim.ID, meta.ReasonReleased)

	// Finished after the cut: kept.
	h.clock.Advance(2 * time.Hour)
	late := h.put(put{Grace: time.Hour})
	h.finish(late.Claim.ID, meta.ReasonExpired)
	live := h.put(put{})

	cut := epoch.Add(time.Hour)
	res := h.pruneHistory(cut, 2)
	if res.Claims != 2 {
		t.Fatalf("PruneHistory(limit 2) = %+v, want 2 claims", res)
	}
	more := h.pruneHistory(cut, 100)
	if res.Claims+more.Claims != 4 || res.Blobs+more.Blobs != 1 {
		t.Fatalf("PruneHistory twice = %+v then %+v, want 4 claims and the collected blob in all", res, more)
	}
	if res := h.pruneHistory(cut, 100); res != (meta.PruneResult{}) {
		t.Errorf("third PruneHistory = %+v, want nothing left", res)
	}
	for _, id := range []string{gone.Claim.ID, released.Claim.ID, uploaded.Claim.ID, first.Claim.ID} {
		h.wantClaimGone(id)
	}
	if _, err := h.s.Blob(h.ctx(), gone.Blob.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("collected blob after pruning: %v, want ErrNotFound", err)
	}
	if _, err := h.s.Upload(h.ctx(), uploaded.Claim.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("upload of a pruned claim: %v, want ErrNotFound", err)
	}
	if _, err := h.s.UploadByKey(h.ctx(), "ns", "k1"); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("idempotency key of a pruned upload: %v, want ErrNotFound", err)
	}
	h.forget(gone.Claim.ID, gone.Blob.ID, released.Claim.ID, uploaded.Claim.ID, first.Claim.ID)

	// What stays: orphaned blobs (not collected yet), the shared committed
	// blob, the late finished claim and the live one.
	for _, id := range []string{released.Blob.ID, uploaded.Blob.ID, late.Blob.ID} {
		if b := h.blob(id); b.State != meta.BlobOrphaned {
			t.Errorf("blob %s after pruning is %s, want orphaned (kept)", id, b.State)
		}
	}
	if b := h.blob(first.Blob.ID); b.State != meta.BlobCommitted || b.Refcount != 1 {
		t.Errorf("shared blob after pruning: %s, refcount %d; want committed, 1", b.State, b.Refcount)
	}
	if c := h.claim(second.Claim.ID); c.State != meta.ClaimActive {
		t.Errorf("live claim on the shared blob is %s", c.State)
	}
	if c := h.claim(late.Claim.ID); c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonExpired {
		t.Errorf("claim finished after the cut: %s/%s, want kept as deleted/expired", c.State, c.DeleteReason)
	}
	if c := h.claim(live.Claim.ID); c.State != meta.ClaimActive {
		t.Errorf("live claim is %s", c.State)
	}
}
