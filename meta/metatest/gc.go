package metatest

import (
	"errors"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// existingParams builds a digest-first put of size bytes with digest d.
func (h *harness) existingParams(d string, size int64) meta.CommitExistingParams {
	now := h.now()
	return meta.CommitExistingParams{
		Claim: meta.Claim{ID: newID("c_"), Namespace: "ns", Size: size, CreatedAt: now,
			ExpiresAt: now.Add(24 * time.Hour), DueAt: now.Add(24 * time.Hour), DueReason: meta.ReasonExpired},
		Digest: d, Now: now,
	}
}

func (h *harness) commitExisting(p meta.CommitExistingParams) (meta.CommitResult, bool) {
	h.t.Helper()
	res, hit, err := h.s.CommitExisting(h.ctx(), p)
	if err != nil {
		h.t.Fatalf("CommitExisting: %v", err)
	}
	if hit {
		h.track(res.Claim.ID, res.Blob.ID)
	}
	return res, hit
}

func testCommitExistingHit(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Size: 300, Dedup: true})
	h.clock.Advance(time.Minute)
	res, hit := h.commitExisting(h.existingParams(d, 300))
	if !hit || !res.DedupHit || res.FlipBack || res.Blob.ID != first.Blob.ID {
		t.Fatalf("CommitExisting = hit %v %+v, want a hit on %s", hit, res, first.Blob.ID)
	}
	c := h.claim(res.Claim.ID)
	if c.State != meta.ClaimActive || c.BlobID != first.Blob.ID || c.Size != 300 || c.DueReason != meta.ReasonExpired {
		t.Errorf("claim = %+v, want active on the shared blob", c)
	}
	if b := h.blob(first.Blob.ID); b.Refcount != 2 || b.State != meta.BlobCommitted {
		t.Errorf("shared blob = %+v, want committed refcount 2", b)
	}
	h.wantCounters("ns", counters{used: 600, active: 2})
}

func testCommitExistingFlipBack(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Dedup: true, Grace: time.Hour})
	h.finish(first.Claim.ID, meta.ReasonReleased)
	h.clock.Advance(30 * time.Minute)
	res, hit := h.commitExisting(h.existingParams(d, 100))
	if !hit || !res.FlipBack {
		t.Fatalf("CommitExisting on an orphan in grace: hit %v FlipBack %v", hit, res.FlipBack)
	}
	if b := h.blob(first.Blob.ID); b.State != meta.BlobCommitted || !b.CollectAt.IsZero() || b.Refcount != 1 {
		t.Errorf("flipped-back blob = %+v", b)
	}
	h.clock.Advance(2 * time.Hour)
	if got := h.beginCollect(100, time.Minute); len(got) != 0 {
		t.Errorf("BeginCollect took %v, want nothing (the blob is referenced again)", blobIDs(got))
	}
}

func testCommitExistingMissChangesNothing(t *testing.T, h *harness) {
	// No blob at all: not even the namespace row appears.
	if _, hit := h.commitExisting(h.existingParams(digestOf("nothing"), 100)); hit {
		t.Fatal("hit on an empty store")
	}
	h.wantCounters("ns", counters{})
	d := digestOf("payload")
	first := h.put(put{Digest: d, Size: 100, Dedup: true})
	// Another size under the same digest: not shareable.
	if _, hit := h.commitExisting(h.existingParams(d, 99)); hit {
		t.Error("hit with a different size")
	}
	// Created before DedupNotBefore: not shareable.
	p := h.existingParams(d, 100)
	p.DedupNotBefore = h.now().Add(time.Second)
	if _, hit := h.commitExisting(p); hit {
		t.Error("hit on a blob older than DedupNotBefore")
	}
	// A blob in deleting counts as absent.
	h.finish(first.Claim.ID, meta.ReasonDeleted)
	if got := h.beginCollect(10, time.Minute); len(got) != 1 {
		t.Fatalf("BeginCollect = %v", blobIDs(got))
	}
	if _, hit := h.commitExisting(h.existingParams(d, 100)); hit {
		t.Error("hit on a deleting blob")
	}
	if b := h.blob(first.Blob.ID); b.State != meta.BlobDeleting || b.Refcount != 0 {
		t.Errorf("deleting blob changed by a miss: %+v", b)
	}
	h.wantCounters("ns", counters{})
}

func testCommitExistingQuota(t *testing.T, h *harness) {
	d := digestOf("payload")
	h.put(put{Digest: d, Size: 100, Dedup: true})
	p := h.existingParams(d, 100)
	p.QuotaBytes = 150
	_, hit, err := h.s.CommitExisting(h.ctx(), p)
	var qe *meta.QuotaError
	if hit || !errors.As(err, &qe) || qe.Resource != "bytes" {
		t.Fatalf("CommitExisting over quota: hit %v err %v, want *QuotaError on bytes", hit, err)
	}
	h.wantCounters("ns", counters{used: 100, active: 1})
}

func testBlobsPagingAndKeys(t *testing.T, h *harness) {
	var want []string
	for range 5 {
		want = append(want, h.put(put{}).Blob.ID)
	}
	var got []meta.Blob
	after := ""
	for {
		page, err := h.s.Blobs(h.ctx(), after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].ID
	}
	if len(got) != len(want) {
		t.Fatalf("paged walk saw %d blobs, want %d", len(got), len(want))
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].ID >= got[i].ID {
			t.Fatalf("Blobs not in id order: %s before %s", got[i-1].ID, got[i].ID)
		}
	}
	refs, err := h.s.LiveRefs(h.ctx(), append(blobIDs(got), "b_absent"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range got {
		if refs[b.ID] != 1 {
			t.Errorf("LiveRefs[%s] = %d, want 1", b.ID, refs[b.ID])
		}
	}
	owners, err := h.s.BlobsByKeys(h.ctx(), []string{got[0].Key, got[1].Key, "ns/unknown"})
	if err != nil {
		t.Fatal(err)
	}
	if len(owners) != 2 || owners[got[0].Key].ID != got[0].ID {
		t.Errorf("BlobsByKeys = %v", owners)
	}
	// Consistent rows: nothing to repair.
	fixes, err := h.s.FixRefcounts(h.ctx(), blobIDs(got), h.now(), time.Hour)
	if err != nil || len(fixes) != 0 {
		t.Errorf("FixRefcounts on consistent rows = %v, %v", fixes, err)
	}
}

func testCursorAndEvents(t *testing.T, h *harness) {
	ctx := h.ctx()
	if v, err := h.s.Cursor(ctx, "job"); err != nil || v != "" {
		t.Fatalf("unset cursor = %q, %v", v, err)
	}
	for _, v := range []string{"a", "b:c"} {
		if err := h.s.SetCursor(ctx, "job", v); err != nil {
			t.Fatal(err)
		}
		if got, err := h.s.Cursor(ctx, "job"); err != nil || got != v {
			t.Fatalf("cursor = %q, %v, want %q", got, err, v)
		}
	}
	evs := []meta.Event{{At: h.now(), Kind: "one", BlobID: "b1", Detail: "x"}, {At: h.now(), Kind: "two", Namespace: "ns"}}
	if err := h.s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if err := h.s.AppendEvents(ctx, evs[:1]); err != nil {
		t.Fatal(err)
	}
	all, err := h.s.Events(ctx, 0, 10)
	if err != nil || len(all) != 3 {
		t.Fatalf("Events = %v, %v", all, err)
	}
	if all[0].Kind != "one" || all[0].BlobID != "b1" || all[1].Kind != "two" || !all[0].At.Equal(h.now()) {
		t.Errorf("Events = %+v", all)
	}
	rest, err := h.s.Events(ctx, all[0].Seq, 10)
	if err != nil || len(rest) != 2 || rest[0].Seq != all[1].Seq {
		t.Errorf("Events after %d = %+v, %v", all[0].Seq, rest, err)
	}
}
