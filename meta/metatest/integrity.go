package metatest

import (
	"errors"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Damaged blobs (meta.IntegrityStore, ADR 0095).

func (h *harness) markDamaged(b meta.Blob, key string) bool {
	h.t.Helper()
	marked, err := h.s.MarkDamaged(h.ctx(), meta.Damage{BlobID: b.ID, Key: key, Cause: meta.DamageMissing, Detail: "test", Now: h.now()})
	if err != nil {
		h.t.Fatalf("MarkDamaged: %v", err)
	}
	return marked
}

// MarkDamaged is a compare-and-swap on the object key and the state, and
// writes one event.
func testMarkDamaged(t *testing.T, h *harness) {
	first := h.put(put{Digest: digestOf("payload"), Dedup: true})
	b := first.Blob
	if h.markDamaged(b, b.Key+".other") {
		t.Fatal("MarkDamaged with another object key marked the blob")
	}
	if !h.markDamaged(b, b.Key) {
		t.Fatal("MarkDamaged of a committed blob with its own key did not mark it")
	}
	got := h.blob(b.ID)
	if !got.Damaged() || got.Damage != "missing: test" || !got.DamagedAt.Equal(h.now()) || got.State != meta.BlobCommitted {
		t.Fatalf("blob after MarkDamaged = %+v", got)
	}
	if h.markDamaged(b, b.Key) {
		t.Fatal("MarkDamaged of a damaged blob marked it again")
	}
	page, err := h.s.DamagedBlobs(h.ctx(), "", 10)
	if err != nil || len(page) != 1 || page[0].ID != b.ID {
		t.Fatalf("DamagedBlobs = %v, %v; want the one blob", page, err)
	}
	if cand, err := h.s.DedupCandidate(h.ctx(), "ns", b.Digest); err != nil || cand.ID != b.ID || !cand.Damaged() {
		t.Fatalf("DedupCandidate = %+v, %v; want the damaged blob", cand, err)
	}
	if _, err := h.s.DedupCandidate(h.ctx(), "ns", digestOf("nothing")); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("DedupCandidate of an unknown digest: %v, want ErrNotFound", err)
	}
	if ok, err := h.s.ClearDamage(h.ctx(), b.ID, b.Key+".other", h.now()); err != nil || ok {
		t.Fatalf("ClearDamage with another key = %v, %v; want no change", ok, err)
	}
	if ok, err := h.s.ClearDamage(h.ctx(), b.ID, b.Key, h.now()); err != nil || !ok || h.blob(b.ID).Damaged() {
		t.Fatalf("ClearDamage = %v, %v; want the blob healthy", ok, err)
	}
	evs, err := h.s.Events(h.ctx(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range evs {
		kinds[e.Kind]++
	}
	if kinds[meta.EventBlobDamaged] != 1 || kinds[meta.EventBlobVerified] != 1 {
		t.Fatalf("events %v: want one blob_damaged, one blob_verified", kinds)
	}
	// A deleting blob is never marked.
	h.finish(first.Claim.ID, meta.ReasonDeleted)
	h.clock.Advance(time.Hour)
	for _, x := range h.beginCollect(10, time.Minute) {
		if x.ID == b.ID && h.markDamaged(x, x.Key) {
			t.Fatal("MarkDamaged marked a deleting blob")
		}
	}
}

// Dedup never attaches a claim to a damaged blob: CommitExisting misses,
// Commit refuses until the caller verified its object, then repairs.
func testDamagedRepair(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Size: 300, Dedup: true})
	h.markDamaged(first.Blob, first.Blob.Key)
	h.clock.Advance(time.Minute)

	if _, hit := h.commitExisting(h.existingParams(d, 300)); hit {
		t.Fatal("CommitExisting attached a claim to a damaged blob")
	}
	p := put{Digest: d, Size: 300, Dedup: true}
	cp := h.pending(p)
	params := h.commitParams(cp, p)
	if _, err := h.s.Commit(h.ctx(), params); !errors.Is(err, meta.ErrDamagedCandidate) {
		t.Fatalf("Commit onto a damaged candidate without RepairVerified: %v, want ErrDamagedCandidate", err)
	}
	if c := h.claim(cp.Claim.ID); c.State != meta.ClaimPending {
		t.Fatalf("the refused commit changed the claim: %+v", c)
	}
	params.RepairVerified, params.StoredSize = true, 123
	res, err := h.s.Commit(h.ctx(), params)
	if err != nil {
		t.Fatalf("repairing Commit: %v", err)
	}
	if !res.Repaired || !res.DedupHit || res.Blob.ID != first.Blob.ID || res.Claim.BlobID != first.Blob.ID {
		t.Fatalf("repairing Commit = %+v; want the damaged blob repaired and shared", res)
	}
	got := h.blob(first.Blob.ID)
	if got.Damaged() || got.Key != cp.Blob.Key || got.StoredSize != 123 || got.State != meta.BlobCommitted ||
		got.Refcount != 2 || !got.CreatedAt.Equal(h.now()) {
		t.Fatalf("repaired blob = %+v; want healthy with the new object %s", got, cp.Blob.Key)
	}
	disc := h.blob(cp.Blob.ID)
	if disc.State != meta.BlobDeleting || disc.Key != first.Blob.Key || res.Discarded.Key != first.Blob.Key {
		t.Fatalf("discarded blob = %+v (result %+v); want deleting with the damaged object's key %s", disc, res.Discarded, first.Blob.Key)
	}
	// Healthy again: a digest-first put shares it.
	if _, hit := h.commitExisting(h.existingParams(d, 300)); !hit {
		t.Fatal("CommitExisting missed the repaired blob")
	}
	h.wantCounters("ns", counters{used: 900, active: 3})
}

// A damaged candidate with dedup off loses its mark like any candidate
// that may not be shared, and stays damaged.
func testDamagedDedupOff(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Dedup: true})
	h.markDamaged(first.Blob, first.Blob.Key)
	res := h.put(put{Digest: d, Dedup: false})
	if res.DedupHit || res.Repaired || res.Blob.ID == first.Blob.ID {
		t.Fatalf("commit with dedup off = %+v; want its own blob", res)
	}
	if cand, err := h.s.DedupCandidate(h.ctx(), "ns", d); err != nil || cand.ID != res.Blob.ID {
		t.Fatalf("DedupCandidate = %+v, %v; want the new blob", cand, err)
	}
	if !h.blob(first.Blob.ID).Damaged() {
		t.Fatal("the damaged blob was healed without a verified object")
	}
}
