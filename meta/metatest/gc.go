package metatest

import (
	"context"
	"errors"
	"reflect"
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

// The one-transaction hit (ADR 0140) charges the namespace before it has
// locked the candidate: every way the candidate can turn out unshareable
// once locked must leave the counters, the blob and the event log as
// they were. The caller checked blob b's object, then something happened
// to it before CommitExisting ran.
func testCommitExistingCheckedCandidateChanged(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Size: 100, Dedup: true, Grace: time.Hour})
	onBlob := func(b meta.Blob) meta.CommitExistingParams {
		p := h.existingParams(d, 100)
		p.BlobID, p.Key = b.ID, b.Key
		return p
	}
	events := func() int {
		evs, err := h.s.Events(h.ctx(), 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	before := events()
	miss := func(what string, p meta.CommitExistingParams, want counters) {
		t.Helper()
		if _, hit := h.commitExisting(p); hit {
			t.Fatalf("%s: hit", what)
		}
		h.wantCounters("ns", want)
		if n := events(); n != before {
			t.Fatalf("%s: %d events logged by a miss", what, n-before)
		}
	}
	// Another object under the same blob (repaired meanwhile): the
	// caller did not look at that one.
	other := first.Blob
	other.Key += ".old"
	miss("another object", onBlob(other), counters{used: 100, active: 1})
	// Marked damaged after the caller's check.
	h.markDamaged(first.Blob, first.Blob.Key)
	before = events() // the mark's own event
	miss("damaged", onBlob(first.Blob), counters{used: 100, active: 1})

	// Collected under the caller: finished, orphaned, then taken by
	// collection (deleting) between the check and the commit.
	second := h.put(put{Digest: digestOf("second"), Size: 100, Dedup: true})
	h.finish(second.Claim.ID, meta.ReasonDeleted)
	h.clock.Advance(time.Minute)
	if got := h.beginCollect(10, time.Minute); len(got) != 1 || got[0].ID != second.Blob.ID {
		t.Fatalf("BeginCollect = %v, want %s", blobIDs(got), second.Blob.ID)
	}
	p := h.existingParams(digestOf("second"), 100)
	p.BlobID, p.Key = second.Blob.ID, second.Blob.Key
	before = events()
	miss("deleting", p, counters{used: 100, active: 1})
	if b := h.blob(second.Blob.ID); b.State != meta.BlobDeleting || b.Refcount != 0 {
		t.Fatalf("a miss changed the deleting blob: %+v", b)
	}
}

// Check runs inside the transaction on the candidate it found: false is a
// miss that changed nothing, true a hit on that candidate.
func testCommitExistingCheck(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Size: 100, Dedup: true})
	var seen []meta.Blob
	p := h.existingParams(d, 100)
	p.Check = func(ctx context.Context, b meta.Blob) bool { seen = append(seen, b); return false }
	if _, hit := h.commitExisting(p); hit {
		t.Fatal("hit although Check said no")
	}
	if len(seen) == 0 || seen[0].ID != first.Blob.ID || seen[0].Key != first.Blob.Key {
		t.Fatalf("Check saw %+v, want the candidate %s", seen, first.Blob.ID)
	}
	h.wantCounters("ns", counters{used: 100, active: 1})
	if b := h.blob(first.Blob.ID); b.Refcount != 1 {
		t.Fatalf("a refused check changed the blob: %+v", b)
	}
	// No candidate: Check is never asked.
	seen = nil
	q := h.existingParams(digestOf("nothing"), 100)
	q.Check = p.Check
	if _, hit := h.commitExisting(q); hit || len(seen) != 0 {
		t.Fatalf("no candidate: hit %v, Check called %d times", hit, len(seen))
	}
	p = h.existingParams(d, 100)
	p.Check = func(ctx context.Context, b meta.Blob) bool { return b.ID == first.Blob.ID }
	res, hit := h.commitExisting(p)
	if !hit || res.Blob.ID != first.Blob.ID || res.Blob.Refcount != 2 || res.Claim.State != meta.ClaimActive {
		t.Fatalf("Check said yes: hit %v %+v", hit, res)
	}
	if got := h.claim(res.Claim.ID); !reflect.DeepEqual(got, res.Claim) {
		t.Fatalf("returned claim %+v, stored %+v", res.Claim, got)
	}
	if got := h.blob(first.Blob.ID); !reflect.DeepEqual(got, res.Blob) {
		t.Fatalf("returned blob %+v, stored %+v", res.Blob, got)
	}
	h.wantCounters("ns", counters{used: 200, active: 2})
}

// A hit over a quota is refused naming the limit, and charges nothing:
// neither the namespace's bytes nor its claims, nor the blob's
// references.
func testCommitExistingQuotaNoLeak(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Size: 100, Dedup: true})
	for _, tc := range []struct {
		resource     string
		bytes, count int64
		limit        int64
	}{
		{"bytes", 199, 0, 199},
		{"claims", 0, 1, 1},
	} {
		p := h.existingParams(d, 100)
		p.BlobID, p.Key = first.Blob.ID, first.Blob.Key
		p.QuotaBytes, p.QuotaClaims = tc.bytes, tc.count
		_, hit, err := h.s.CommitExisting(h.ctx(), p)
		var qe *meta.QuotaError
		if hit || !errors.As(err, &qe) || qe.Resource != tc.resource || qe.Limit != tc.limit || qe.Namespace != "ns" {
			t.Fatalf("over the %s quota: hit %v, %v; want *QuotaError on %s, limit %d", tc.resource, hit, err, tc.resource, tc.limit)
		}
		if _, err := h.s.Claim(h.ctx(), p.Claim.ID); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("the refused claim exists: %v", err)
		}
	}
	h.wantCounters("ns", counters{used: 100, active: 1})
	if b := h.blob(first.Blob.ID); b.Refcount != 1 {
		t.Fatalf("a refused hit took a reference: %+v", b)
	}
	// At the limit exactly: a hit.
	p := h.existingParams(d, 100)
	p.QuotaBytes, p.QuotaClaims = 200, 2
	if _, hit := h.commitExisting(p); !hit {
		t.Fatal("no hit with the quota exactly reached")
	}
	h.wantCounters("ns", counters{used: 200, active: 2})
}
