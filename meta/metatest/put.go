package metatest

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

func testCreateCommitRoundTrip(t *testing.T, h *harness) {
	p := put{
		Size: 1000, Reserve: 1200, ContentType: "application/json",
		Labels:    map[string]string{"job": "42", "team": "video"},
		Consumers: 2, ConsumerNames: []string{"billing", "search"},
		DeleteAfterRead: true, Retention: 5 * time.Minute, Grace: time.Hour,
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}.withDefaults()
	cp := h.pending(p)

	c := h.claim(cp.Claim.ID)
	if c.State != meta.ClaimPending || c.BlobID != cp.Blob.ID || c.Namespace != "ns" {
		t.Errorf("pending claim = %+v", c)
	}
	if c.ReservedBytes != 1200 || c.ContentType != "application/json" || !maps.Equal(c.Labels, p.Labels) {
		t.Errorf("pending claim fields = %+v", c)
	}
	if c.Consumers != 2 || !slices.Equal(c.ConsumerNames, p.ConsumerNames) || len(c.ReleasedBy) != 0 {
		t.Errorf("pending claim consumers = %d %v %v", c.Consumers, c.ConsumerNames, c.ReleasedBy)
	}
	if !c.DeleteAfterRead || c.RetentionAfterRead != 5*time.Minute || c.GracePeriod != time.Hour {
		t.Errorf("pending claim policy = %v %v %v", c.DeleteAfterRead, c.RetentionAfterRead, c.GracePeriod)
	}
	if c.TraceParent != p.TraceParent {
		t.Errorf("pending claim TraceParent = %q, want %q", c.TraceParent, p.TraceParent)
	}
	wantTime(t, "CreatedAt", c.CreatedAt, epoch)
	wantTime(t, "ExpiresAt", c.ExpiresAt, epoch.Add(24*time.Hour))
	wantTime(t, "pending DueAt", c.DueAt, epoch.Add(time.Hour))
	if c.DueReason != meta.ReasonNeverConfirmed {
		t.Errorf("pending DueReason = %q", c.DueReason)
	}
	b := h.blob(cp.Blob.ID)
	if b.State != meta.BlobStaging || b.Digest != "" || b.Key != cp.Blob.Key || b.Namespace != "ns" {
		t.Errorf("staging blob = %+v", b)
	}
	wantTime(t, "staging CollectAt", b.CollectAt, epoch.Add(time.Hour))
	h.wantCounters("ns", counters{reserved: 1200, pending: 1})

	h.clock.Advance(time.Minute)
	res := h.commit(cp, p)
	if res.DedupHit || res.FlipBack {
		t.Errorf("first commit: DedupHit=%v FlipBack=%v", res.DedupHit, res.FlipBack)
	}
	if res.Claim.State != meta.ClaimActive || res.Blob.ID != cp.Blob.ID {
		t.Errorf("commit result = %+v", res)
	}
	c = h.claim(cp.Claim.ID)
	if c.State != meta.ClaimActive || c.Size != 1000 || c.BlobID != cp.Blob.ID || c.TraceParent != p.TraceParent {
		t.Errorf("active claim = %+v", c)
	}
	wantTime(t, "active DueAt", c.DueAt, epoch.Add(24*time.Hour))
	if c.DueReason != meta.ReasonExpired {
		t.Errorf("active DueReason = %q", c.DueReason)
	}
	wantTime(t, "ExpiresAt after commit", c.ExpiresAt, epoch.Add(24*time.Hour))
	b = h.blob(cp.Blob.ID)
	if b.State != meta.BlobCommitted || b.Digest != p.Digest || b.Size != 1000 || b.StoredSize != 500 ||
		b.Compression != "zstd" || b.Refcount != 1 {
		t.Errorf("committed blob = %+v", b)
	}
	if !b.CollectAt.IsZero() {
		t.Errorf("committed blob CollectAt = %v, want zero", b.CollectAt)
	}
	wantTime(t, "blob StateAt", b.StateAt, epoch.Add(time.Minute))
	if res.Blob.State != meta.BlobCommitted || res.Blob.Digest != p.Digest {
		t.Errorf("commit result blob = %+v", res.Blob)
	}
	h.wantCounters("ns", counters{used: 1000, active: 1})
}

func testCreatePendingDuplicateID(t *testing.T, h *harness) {
	cp := h.pending(put{})
	if err := h.s.CreatePending(h.ctx(), cp); err == nil {
		t.Fatal("CreatePending with an existing claim id succeeded")
	}
	h.wantCounters("ns", counters{reserved: 100, pending: 1})
}

func testQuotaBytesRefused(t *testing.T, h *harness) {
	h.put(put{Size: 100, QuotaBytes: 250})
	h.pending(put{Reserve: 100, QuotaBytes: 250})
	cp, err := h.tryPending(put{Reserve: 51, QuotaBytes: 250})
	var qe *meta.QuotaError
	if !errors.As(err, &qe) {
		t.Fatalf("CreatePending over quota: error = %v, want *meta.QuotaError", err)
	}
	want := meta.QuotaError{Namespace: "ns", Resource: "bytes", Limit: 250, Used: 100, Reserved: 100, Requested: 51}
	if *qe != want {
		t.Errorf("QuotaError = %+v, want %+v", *qe, want)
	}
	_, err = h.s.Claim(h.ctx(), cp.Claim.ID)
	wantErr(t, "refused claim", err, meta.ErrNotFound)
	_, err = h.s.Blob(h.ctx(), cp.Blob.ID)
	wantErr(t, "refused blob", err, meta.ErrNotFound)
	h.wantCounters("ns", counters{used: 100, reserved: 100, active: 1, pending: 1})

	// Exactly up to the limit fits; unlimited (0) always fits.
	h.pending(put{Reserve: 50, QuotaBytes: 250})
	h.pending(put{Reserve: 1 << 40})
	h.wantCounters("ns", counters{used: 100, reserved: 150 + 1<<40, active: 1, pending: 3})
}

func testQuotaClaimsRefused(t *testing.T, h *harness) {
	h.put(put{QuotaClaims: 2})
	h.pending(put{QuotaClaims: 2})
	cp, err := h.tryPending(put{QuotaClaims: 2})
	var qe *meta.QuotaError
	if !errors.As(err, &qe) || qe.Resource != "claims" || qe.Limit != 2 {
		t.Fatalf("CreatePending over claim quota: error = %v, want *meta.QuotaError for claims", err)
	}
	_, err = h.s.Claim(h.ctx(), cp.Claim.ID)
	wantErr(t, "refused claim", err, meta.ErrNotFound)
	h.wantCounters("ns", counters{used: 100, reserved: 100, active: 1, pending: 1})
	// Another namespace has its own count.
	h.pending(put{NS: "other", QuotaClaims: 2})
	h.wantCounters("other", counters{reserved: 100, pending: 1})
}

func testCommitQuotaRefused(t *testing.T, h *harness) {
	h.put(put{Size: 100})
	p := put{Reserve: 10, Size: 200, QuotaBytes: 250}.withDefaults()
	cp := h.pending(p)
	_, err := h.s.Commit(h.ctx(), h.commitParams(cp, p))
	var qe *meta.QuotaError
	if !errors.As(err, &qe) || qe.Resource != "bytes" || qe.Limit != 250 {
		t.Fatalf("Commit over quota: error = %v, want *meta.QuotaError", err)
	}
	if c := h.claim(cp.Claim.ID); c.State != meta.ClaimPending {
		t.Errorf("claim after refused commit is %s, want pending", c.State)
	}
	if b := h.blob(cp.Blob.ID); b.State != meta.BlobStaging || b.Digest != "" {
		t.Errorf("blob after refused commit = %+v, want staging without digest", b)
	}
	h.wantCounters("ns", counters{used: 100, reserved: 10, active: 1, pending: 1})

	// The same commit fits once the limit allows the final size.
	p.QuotaBytes = 300
	h.commit(cp, p)
	h.wantCounters("ns", counters{used: 300, active: 2})
}

func testCommitConflicts(t *testing.T, h *harness) {
	p := put{}.withDefaults()
	cp := h.pending(p)
	h.commit(cp, p)
	_, err := h.s.Commit(h.ctx(), h.commitParams(cp, p))
	wantErr(t, "second Commit", err, meta.ErrConflict)
	h.wantCounters("ns", counters{used: 100, active: 1})

	// The reaper won: a pending claim finished before its commit.
	p2 := put{}.withDefaults()
	cp2 := h.pending(p2)
	h.finish(cp2.Claim.ID, meta.ReasonNeverConfirmed)
	_, err = h.s.Commit(h.ctx(), h.commitParams(cp2, p2))
	wantErr(t, "Commit after finish", err, meta.ErrConflict)
	if b := h.blob(cp2.Blob.ID); b.State != meta.BlobOrphaned {
		t.Errorf("reaped staging blob is %s, want orphaned", b.State)
	}
	h.wantCounters("ns", counters{used: 100, active: 1})

	cp3 := h.pendingParams(put{})
	_, err = h.s.Commit(h.ctx(), h.commitParams(cp3, put{}))
	wantErr(t, "Commit of unknown claim", err, meta.ErrNotFound)
}

func testDedupHit(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Size: 300, Dedup: true})
	h.clock.Advance(time.Minute)
	p := put{Digest: d, Size: 300, Dedup: true}
	cp := h.pending(p)
	res := h.commit(cp, p)
	if !res.DedupHit || res.FlipBack {
		t.Errorf("DedupHit=%v FlipBack=%v, want true false", res.DedupHit, res.FlipBack)
	}
	if res.Blob.ID != first.Blob.ID || res.Claim.BlobID != first.Blob.ID {
		t.Errorf("dedup result points at %s / %s, want %s", res.Blob.ID, res.Claim.BlobID, first.Blob.ID)
	}
	if c := h.claim(cp.Claim.ID); c.BlobID != first.Blob.ID || c.State != meta.ClaimActive {
		t.Errorf("claim after dedup = %+v", c)
	}
	shared := h.blob(first.Blob.ID)
	if shared.State != meta.BlobCommitted || shared.Refcount != 2 || !shared.CollectAt.IsZero() {
		t.Errorf("shared blob = %+v, want committed with refcount 2", shared)
	}
	staging := h.blob(cp.Blob.ID)
	if staging.State != meta.BlobDeleting || staging.Digest != "" {
		t.Errorf("deduplicated staging blob = %+v, want deleting without digest", staging)
	}
	wantTime(t, "deduplicated staging blob CollectAt", staging.CollectAt, h.now())
	if d := res.Discarded; d.ID != cp.Blob.ID || d.Key != staging.Key || d.State != meta.BlobDeleting || !d.CollectAt.Equal(staging.CollectAt) {
		t.Errorf("Discarded = %+v, want the staging blob as stored: %+v", d, staging)
	}
	// Its caller deletes the object and finishes the collection at once.
	if err := h.s.FinishCollect(h.ctx(), []string{cp.Blob.ID}, h.now()); err != nil {
		t.Fatal(err)
	}
	if b := h.blob(cp.Blob.ID); b.State != meta.BlobDeleted {
		t.Errorf("discarded staging blob after FinishCollect is %s, want deleted", b.State)
	}
	// Usage is charged per claim, shared or not.
	h.wantCounters("ns", counters{used: 600, active: 2})
}

func testDedupFlipBack(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Dedup: true, Grace: time.Hour})
	res, done := h.finish(first.Claim.ID, meta.ReasonDeleted)
	if !done || !res.BlobOrphaned {
		t.Fatalf("finish: done=%v BlobOrphaned=%v", done, res.BlobOrphaned)
	}
	b := h.blob(first.Blob.ID)
	if b.State != meta.BlobOrphaned || b.Digest != d {
		t.Fatalf("blob after last claim finished = %+v, want orphaned with digest", b)
	}
	wantTime(t, "orphaned CollectAt", b.CollectAt, epoch.Add(time.Hour))

	h.clock.Advance(10 * time.Minute)
	p := put{Digest: d, Dedup: true}
	cp := h.pending(p)
	second := h.commit(cp, p)
	if !second.DedupHit || !second.FlipBack || second.Blob.ID != first.Blob.ID {
		t.Fatalf("dedup onto orphan: DedupHit=%v FlipBack=%v blob %s", second.DedupHit, second.FlipBack, second.Blob.ID)
	}
	b = h.blob(first.Blob.ID)
	if b.State != meta.BlobCommitted || !b.CollectAt.IsZero() {
		t.Errorf("flipped-back blob = %+v, want committed without collect_at", b)
	}
	// Once the grace period is over only the new claim's unused staging
	// blob is collected, never the shared one.
	h.clock.Advance(2 * time.Hour)
	got := h.beginCollect(100, time.Minute)
	if len(got) != 1 || got[0].ID != cp.Blob.ID {
		t.Errorf("BeginCollect = %v, want only the staging blob %s", blobIDs(got), cp.Blob.ID)
	}
	h.wantCounters("ns", counters{used: 100, active: 1})
}

func testDedupDisabled(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Dedup: true})
	second := h.put(put{Digest: d, Dedup: false})
	if second.DedupHit || second.Blob.ID == first.Blob.ID {
		t.Fatalf("commit without dedup shared blob %s", second.Blob.ID)
	}
	for _, id := range []string{first.Blob.ID, second.Blob.ID} {
		if b := h.blob(id); b.State != meta.BlobCommitted || b.Digest != d {
			t.Errorf("blob %s = %+v, want committed with digest", id, b)
		}
	}
	// A later put with dedup shares one of them.
	third := h.put(put{Digest: d, Dedup: true})
	if !third.DedupHit || (third.Blob.ID != first.Blob.ID && third.Blob.ID != second.Blob.ID) {
		t.Errorf("dedup after a non-dedup commit: DedupHit=%v blob %s", third.DedupHit, third.Blob.ID)
	}
	h.wantCounters("ns", counters{used: 300, active: 3})
}

func testDedupNotBefore(t *testing.T, h *harness) {
	d := digestOf("payload")
	old := h.put(put{Digest: d, Dedup: true})
	h.clock.Advance(time.Hour)
	cutoff := epoch.Add(30 * time.Minute)
	fresh := h.put(put{Digest: d, Dedup: true, DedupNotBefore: cutoff})
	if fresh.DedupHit || fresh.Blob.ID == old.Blob.ID {
		t.Fatalf("dedup reused a blob created before DedupNotBefore")
	}
	if b := h.blob(fresh.Blob.ID); b.State != meta.BlobCommitted || b.Digest != d {
		t.Errorf("fresh blob = %+v, want committed with digest", b)
	}
	if b := h.blob(old.Blob.ID); b.State != meta.BlobCommitted {
		t.Errorf("old blob is %s, want still committed (its claim lives)", b.State)
	}
	h.clock.Advance(time.Minute)
	next := h.put(put{Digest: d, Dedup: true, DedupNotBefore: cutoff})
	if !next.DedupHit || next.Blob.ID != fresh.Blob.ID {
		t.Errorf("dedup after cutoff: DedupHit=%v blob %s, want the fresh blob %s", next.DedupHit, next.Blob.ID, fresh.Blob.ID)
	}
	// A blob created exactly at DedupNotBefore qualifies.
	exact := h.put(put{Digest: d, Dedup: true, DedupNotBefore: fresh.Blob.CreatedAt})
	if !exact.DedupHit || exact.Blob.ID != fresh.Blob.ID {
		t.Errorf("DedupNotBefore equal to created_at: DedupHit=%v blob %s", exact.DedupHit, exact.Blob.ID)
	}
}

func testDeletingNotUsedForDedup(t *testing.T, h *harness) {
	d := digestOf("payload")
	first := h.put(put{Digest: d, Dedup: true})
	h.finish(first.Claim.ID, meta.ReasonDeleted)
	got := h.beginCollect(10, time.Minute)
	if len(got) != 1 || got[0].ID != first.Blob.ID {
		t.Fatalf("BeginCollect = %v, want %s", blobIDs(got), first.Blob.ID)
	}
	second := h.put(put{Digest: d, Dedup: true})
	if second.DedupHit || second.Blob.ID == first.Blob.ID {
		t.Fatalf("dedup reused a deleting blob")
	}
	if err := h.s.FinishCollect(h.ctx(), []string{first.Blob.ID}, h.now()); err != nil {
		t.Fatal(err)
	}
	if b := h.blob(first.Blob.ID); b.State != meta.BlobDeleted {
		t.Errorf("collected blob is %s, want deleted", b.State)
	}
	third := h.put(put{Digest: d, Dedup: true})
	if !third.DedupHit || third.Blob.ID != second.Blob.ID {
		t.Errorf("dedup after collection: DedupHit=%v blob %s, want %s", third.DedupHit, third.Blob.ID, second.Blob.ID)
	}
}

func testDedupAcrossNamespaces(t *testing.T, h *harness) {
	d := digestOf("payload")
	a := h.put(put{NS: "a", Digest: d, Dedup: true})
	b := h.put(put{NS: "b", Digest: d, Dedup: true})
	if b.DedupHit || b.Blob.ID == a.Blob.ID {
		t.Errorf("dedup crossed namespaces")
	}
	h.wantCounters("a", counters{used: 100, active: 1})
	h.wantCounters("b", counters{used: 100, active: 1})
}

func blobIDs(bs []meta.Blob) []string {
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	return ids
}

// testCreatePendingUnlessDigest: with UnlessDigest, CreatePending is the
// digest-first check too. A namespace holding a candidate of the digest
// answers a *CandidateError with it and creates nothing (no rows, no
// reservation, even over quota); one holding none creates the pending
// claim as usual; the check is per namespace.
func testCreatePendingUnlessDigest(t *testing.T, h *harness) {
	d := digestOf("unless digest")
	shared := h.put(put{Digest: d, Size: 100})
	for _, quota := range []int64{0, 100} {
		cp := h.pendingParams(put{Reserve: 100, QuotaBytes: quota})
		cp.UnlessDigest = d
		err := h.s.CreatePending(h.ctx(), cp)
		ce, ok := errors.AsType[*meta.CandidateError](err)
		if !ok || ce.Blob.ID != shared.Blob.ID || ce.Blob.Digest != d {
			t.Fatalf("CreatePending unless a candidate (quota %d) = %v, want a *CandidateError with blob %s", quota, err, shared.Blob.ID)
		}
		_, err = h.s.Claim(h.ctx(), cp.Claim.ID)
		wantErr(t, "claim of a put that found a candidate", err, meta.ErrNotFound)
		_, err = h.s.Blob(h.ctx(), cp.Blob.ID)
		wantErr(t, "blob of a put that found a candidate", err, meta.ErrNotFound)
		h.wantCounters("ns", counters{used: 100, active: 1})
	}

	cp := h.pendingParams(put{Reserve: 100})
	cp.UnlessDigest = digestOf("not stored")
	if err := h.s.CreatePending(h.ctx(), cp); err != nil {
		t.Fatalf("CreatePending unless a candidate, none there: %v", err)
	}
	h.track(cp.Claim.ID, cp.Blob.ID)
	other := h.pendingParams(put{NS: "other", Reserve: 100})
	other.UnlessDigest = d
	if err := h.s.CreatePending(h.ctx(), other); err != nil {
		t.Fatalf("CreatePending unless a candidate, one in another namespace: %v", err)
	}
	h.track(other.Claim.ID, other.Blob.ID)
	h.wantCounters("ns", counters{used: 100, reserved: 100, active: 1, pending: 1})
	h.wantCounters("other", counters{reserved: 100, pending: 1})
}

// testTraceParentKept: the traceparent of the span that created a claim
// is kept with it on every way a claim is written (without labels
// PostgreSQL writes it in one statement, or grouped with other puts) and
// read back with it.
func testTraceParentKept(t *testing.T, h *harness) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	p := put{TraceParent: tp}.withDefaults()
	res := h.put(p)
	if c := h.claim(res.Claim.ID); c.TraceParent != tp {
		t.Errorf("claim TraceParent = %q, want %q", c.TraceParent, tp)
	}
	c, _, ok, err := h.s.ClaimWithBlob(h.ctx(), res.Claim.ID)
	if err != nil || !ok || c.TraceParent != tp {
		t.Errorf("ClaimWithBlob: TraceParent %q, ok %v, err %v", c.TraceParent, ok, err)
	}
	plain := h.put(put{}.withDefaults())
	if c := h.claim(plain.Claim.ID); c.TraceParent != "" {
		t.Errorf("a claim created without a span has TraceParent %q", c.TraceParent)
	}
}
