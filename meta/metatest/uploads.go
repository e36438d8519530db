package metatest

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// uploadOf is the Upload row of the pending claim cp.
func uploadOf(cp meta.CreatePendingParams, key string) meta.Upload {
	return meta.Upload{
		ClaimID: cp.Claim.ID, Namespace: cp.Claim.Namespace, BlobID: cp.Blob.ID, Key: cp.Blob.Key,
		Size: cp.Claim.ReservedBytes, Digest: randomDigest(), ContentType: "text/csv",
		IdempotencyKey: key, CreatedAt: cp.Now,
	}
}

func testUploadRoundTrip(t *testing.T, h *harness) {
	cp := h.pending(put{})
	u := uploadOf(cp, "")
	got, created, err := h.s.CreateUpload(h.ctx(), u)
	if err != nil || !created {
		t.Fatalf("CreateUpload = %v, %v", created, err)
	}
	if got != u {
		t.Errorf("CreateUpload returned %+v, want %+v", got, u)
	}
	loaded, err := h.s.Upload(h.ctx(), cp.Claim.ID)
	if err != nil {
		t.Fatal(err)
	}
	if loaded != u {
		t.Errorf("Upload = %+v, want %+v", loaded, u)
	}
	// Commit and finish do not touch the upload row.
	res := h.commit(cp, put{Size: u.Size, Digest: u.Digest})
	h.finish(res.Claim.ID, meta.ReasonDeleted)
	if loaded, err = h.s.Upload(h.ctx(), cp.Claim.ID); err != nil || loaded != u {
		t.Errorf("Upload after finish = %+v, %v", loaded, err)
	}
	if _, _, err := h.s.CreateUpload(h.ctx(), u); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("second CreateUpload of one claim = %v, want ErrConflict", err)
	}
}

func testUploadNotFound(t *testing.T, h *harness) {
	if _, err := h.s.Upload(h.ctx(), "c_none"); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("Upload(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := h.s.UploadByKey(h.ctx(), "ns", "k"); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("UploadByKey(unknown) = %v, want ErrNotFound", err)
	}
	// A plain put's pending claim is not an upload.
	cp := h.pending(put{})
	if _, err := h.s.Upload(h.ctx(), cp.Claim.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("Upload(put's claim) = %v, want ErrNotFound", err)
	}
	u := uploadOf(cp, "")
	u.ClaimID = "c_none"
	if _, _, err := h.s.CreateUpload(h.ctx(), u); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("CreateUpload(unknown claim) = %v, want ErrNotFound", err)
	}
	h.finish(cp.Claim.ID, meta.ReasonAborted)
}

func testUploadIdempotencyKey(t *testing.T, h *harness) {
	first := h.pending(put{})
	u1 := uploadOf(first, "key-1")
	if _, created, err := h.s.CreateUpload(h.ctx(), u1); err != nil || !created {
		t.Fatalf("CreateUpload = %v, %v", created, err)
	}
	second := h.pending(put{})
	got, created, err := h.s.CreateUpload(h.ctx(), uploadOf(second, "key-1"))
	if err != nil || created {
		t.Fatalf("CreateUpload with a used key = created %v, %v; want the existing upload", created, err)
	}
	if got != u1 {
		t.Errorf("CreateUpload with a used key returned %+v, want %+v", got, u1)
	}
	if byKey, err := h.s.UploadByKey(h.ctx(), "ns", "key-1"); err != nil || byKey != u1 {
		t.Errorf("UploadByKey = %+v, %v", byKey, err)
	}
	// Keys are per namespace.
	other := h.pending(put{NS: "other"})
	if _, created, err := h.s.CreateUpload(h.ctx(), uploadOf(other, "key-1")); err != nil || !created {
		t.Errorf("same key in another namespace: created %v, %v", created, err)
	}
	h.finish(second.Claim.ID, meta.ReasonAborted)
}

func testUploadIdempotencyConcurrent(t *testing.T, h *harness) {
	const n = 8
	cps := make([]meta.CreatePendingParams, n)
	for i := range cps {
		cps[i] = h.pending(put{})
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners = map[string]int{}
		made    int
	)
	for i := range n {
		wg.Go(func() {
			got, created, err := h.s.CreateUpload(h.ctx(), uploadOf(cps[i], "same"))
			if err != nil {
				t.Errorf("CreateUpload: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			winners[got.ClaimID]++
			if created {
				made++
			}
		})
	}
	wg.Wait()
	if made != 1 || len(winners) != 1 {
		t.Errorf("%d inits with one key: %d created, answered with %d different uploads; want 1 and 1", n, made, len(winners))
	}
	for _, cp := range cps {
		if winners[cp.Claim.ID] == 0 {
			h.finish(cp.Claim.ID, meta.ReasonAborted)
		}
	}
}

func testSecret(t *testing.T, h *harness) {
	const n = 6
	got := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := h.s.Secret(h.ctx(), "upload-url", []byte{byte(i + 1), 2, 3})
			if err != nil {
				t.Errorf("Secret: %v", err)
			}
			got[i] = s
		})
	}
	wg.Wait()
	for i := range got {
		if !bytes.Equal(got[i], got[0]) || len(got[i]) != 3 {
			t.Fatalf("Secret answers differ: %x", got)
		}
	}
	again, err := h.s.Secret(h.ctx(), "upload-url", []byte("other"))
	if err != nil || !bytes.Equal(again, got[0]) {
		t.Errorf("Secret later = %x, %v; want the stored %x", again, err, got[0])
	}
	if other, err := h.s.Secret(h.ctx(), "another", []byte("x")); err != nil || string(other) != "x" {
		t.Errorf("Secret(another) = %q, %v", other, err)
	}
}

// testResumable checks a resumable upload's rows: created with its
// handle on the staging blob, progress recorded only from the offset
// recorded last, the deadline following progress, nothing recorded once
// the reaper finished the claim, and the handle still on the blob the
// sweeper collects (which is how it finds the incomplete upload).
func testResumable(t *testing.T, h *harness) {
	cp := h.pending(put{UploadWithin: time.Minute, Reserve: 1000})
	u := uploadOf(cp, "")
	u.Digest = "" // nothing declared: completion takes what arrived
	if err := h.s.CreateResumable(h.ctx(), u, "handle-1"); err != nil {
		t.Fatalf("CreateResumable: %v", err)
	}
	if err := h.s.CreateResumable(h.ctx(), u, "handle-2"); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("second CreateResumable = %v, want ErrConflict", err)
	}
	r, err := h.s.Resumable(h.ctx(), u.ClaimID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Upload != u || r.Received != 0 || r.Handle != "handle-1" {
		t.Errorf("Resumable = %+v, want %+v at 0 bytes with handle-1", r, u)
	}
	if b := h.blob(u.BlobID); b.AppendHandle != "handle-1" {
		t.Errorf("staging blob's AppendHandle = %q, want handle-1", b.AppendHandle)
	}

	h.clock.Advance(50 * time.Second)
	due := h.now().Add(time.Minute)
	if err := h.s.RecordReceived(h.ctx(), meta.Received{ID: u.ClaimID, BlobID: u.BlobID, From: 0, To: 400,
		HashState: []byte("state at 400"), DueAt: due, Now: h.now()}); err != nil {
		t.Fatalf("RecordReceived 0 → 400: %v", err)
	}
	if r, _ := h.s.Resumable(h.ctx(), u.ClaimID); string(r.HashState) != "state at 400" || r.HashedTo != 400 {
		t.Errorf("hash state after RecordReceived = %q to %d, want the one given, to 400", r.HashState, r.HashedTo)
	}
	if c := h.claim(u.ClaimID); !c.DueAt.Equal(due) {
		t.Errorf("due after progress = %v, want %v", c.DueAt, due)
	}
	if b := h.blob(u.BlobID); !b.CollectAt.Equal(due) {
		t.Errorf("staging blob's collect time after progress = %v, want %v", b.CollectAt, due)
	}
	// A second append from the stale offset (another replica, a retry)
	// changes nothing.
	if err := h.s.RecordReceived(h.ctx(), meta.Received{ID: u.ClaimID, BlobID: u.BlobID, From: 0, To: 300, DueAt: due.Add(time.Hour), Now: h.now()}); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("RecordReceived from a stale offset = %v, want ErrConflict", err)
	}
	if r, _ := h.s.Resumable(h.ctx(), u.ClaimID); r.Received != 400 {
		t.Errorf("received = %d after a refused record, want 400", r.Received)
	}
	// Progress without a hash leaves the saved one behind.
	if err := h.s.RecordReceived(h.ctx(), meta.Received{ID: u.ClaimID, BlobID: u.BlobID, From: 400, To: 450, DueAt: due, Now: h.now()}); err != nil {
		t.Fatal(err)
	}
	if r, _ := h.s.Resumable(h.ctx(), u.ClaimID); r.Received != 450 || r.HashedTo != 400 || string(r.HashState) != "state at 400" {
		t.Errorf("after progress without a hash: received %d, hash to %d (%q); want 450, and the hash still to 400", r.Received, r.HashedTo, r.HashState)
	}
	if err := h.s.RecordReceived(h.ctx(), meta.Received{ID: "c_none", BlobID: u.BlobID, From: 0, To: 1, DueAt: due, Now: h.now()}); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("RecordReceived(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := h.s.Resumable(h.ctx(), h.pending(put{}).Claim.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("Resumable(a put's claim) = %v, want ErrNotFound", err)
	}

	// Reaped: no more progress, and the blob due for collection still
	// carries the handle.
	h.clock.Advance(2 * time.Minute)
	if _, err := h.s.FinishDueClaims(h.ctx(), h.now(), 100); err != nil {
		t.Fatal(err)
	}
	if err := h.s.RecordReceived(h.ctx(), meta.Received{ID: u.ClaimID, BlobID: u.BlobID, From: 450, To: 500, DueAt: h.now().Add(time.Minute), Now: h.now()}); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("RecordReceived after the reaper = %v, want ErrConflict", err)
	}
	var found bool
	for _, b := range h.beginCollect(100, time.Minute) {
		if b.ID == u.BlobID {
			found = true
			if b.AppendHandle != "handle-1" {
				t.Errorf("collected blob's AppendHandle = %q, want handle-1", b.AppendHandle)
			}
		}
	}
	if !found {
		t.Errorf("the reaped upload's staging blob is not due for collection")
	}
	h.checkInvariants(t)
}

// testRestage checks that a pending upload moved to a new staging blob
// commits on the new one, leaves the old one orphaned (with its append
// handle, due at the time given), and that only one restage from a blob
// wins.
func testRestage(t *testing.T, h *harness) {
	cp := h.pending(put{Reserve: 100})
	u := uploadOf(cp, "")
	if err := h.s.CreateResumable(h.ctx(), u, "handle-1"); err != nil {
		t.Fatal(err)
	}
	to := meta.Blob{ID: newID("b_"), Namespace: u.Namespace, Key: u.Namespace + "/restaged", CreatedAt: h.now()}
	h.mu.Lock()
	h.blobs = append(h.blobs, to.ID) // the claim is tracked already
	h.mu.Unlock()
	fromCollect := h.now().Add(time.Minute)
	p := meta.RestageParams{ClaimID: u.ClaimID, From: u.BlobID, To: to, FromCollectAt: fromCollect, Now: h.now()}
	if err := h.s.Restage(h.ctx(), p); err != nil {
		t.Fatalf("Restage: %v", err)
	}
	if c := h.claim(u.ClaimID); c.BlobID != to.ID || c.State != meta.ClaimPending {
		t.Errorf("claim after Restage is %s on %s, want pending on %s", c.State, c.BlobID, to.ID)
	}
	if b := h.blob(to.ID); b.State != meta.BlobStaging || b.Key != to.Key || !b.CollectAt.Equal(cp.Claim.DueAt) {
		t.Errorf("new blob = %+v, want staging at %s, collected at the claim's due time %v", b, to.Key, cp.Claim.DueAt)
	}
	if b := h.blob(u.BlobID); b.State != meta.BlobOrphaned || !b.CollectAt.Equal(fromCollect) || b.AppendHandle != "handle-1" {
		t.Errorf("old blob = %+v, want orphaned, collected at %v, with its handle", b, fromCollect)
	}
	p.To.ID = newID("b_")
	if err := h.s.Restage(h.ctx(), p); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("second Restage from the old blob = %v, want ErrConflict", err)
	}
	moved := cp
	moved.Blob = h.blob(to.ID)
	res := h.commit(moved, put{Size: 100})
	if res.Claim.BlobID != to.ID || res.Blob.State != meta.BlobCommitted {
		t.Errorf("commit on the new blob: claim on %s, blob %s", res.Claim.BlobID, res.Blob.State)
	}
	h.wantCounters(u.Namespace, counters{used: 100, active: 1})
	h.checkInvariants(t)
}
