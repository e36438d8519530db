package metatest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// deleting returns a blob of a finished claim that BeginCollect moved to
// deleting (its object delete is "in flight").
func (h *harness) deleting() meta.Blob {
	h.t.Helper()
	return h.deletingIn("ns")
}

// deletingIn is deleting in namespace ns.
func (h *harness) deletingIn(ns string) meta.Blob {
	h.t.Helper()
	res := h.put(put{NS: ns})
	h.finish(res.Claim.ID, meta.ReasonDeleted)
	b := h.blob(res.Blob.ID)
	for _, got := range h.beginCollect(100, time.Minute) {
		if got.ID == b.ID {
			return h.blob(b.ID)
		}
	}
	h.t.Fatalf("BeginCollect did not take blob %s", b.ID)
	return meta.Blob{}
}

// deadLetterIDs lists the parked blobs (of namespace ns, or all with "")
// in pages of two.
func (h *harness) deadLetterIDs(ns string) []string {
	h.t.Helper()
	var ids []string
	after := ""
	for {
		page, err := h.s.DeadLetters(h.ctx(), ns, after, 2)
		if err != nil {
			h.t.Fatalf("DeadLetters: %v", err)
		}
		if len(page) == 0 {
			return ids
		}
		ids = append(ids, blobIDs(page)...)
		after = page[len(page)-1].ID
	}
}

// testParkAndRetry: a parked blob leaves the due index but keeps its row,
// attempts and error; it costs no quota; a retry puts it back due now with
// a fresh schedule, and its collection then finishes normally.
func testParkAndRetry(t *testing.T, h *harness) {
	b := h.deleting()
	if err := h.s.CollectFailed(h.ctx(), b.ID, "timeout", h.now().Add(time.Minute)); err != nil {
		t.Fatalf("CollectFailed: %v", err)
	}
	parkedAt := h.now()
	if err := h.s.ParkBlob(h.ctx(), b.ID, "access denied", parkedAt); err != nil {
		t.Fatalf("ParkBlob: %v", err)
	}
	got := h.blob(b.ID)
	if got.State != meta.BlobDeleting || got.Attempts != 2 || got.LastError != "access denied" || !got.CollectAt.IsZero() {
		t.Errorf("parked blob = %+v, want deleting, 2 attempts, the last error, no collect_at", got)
	}
	wantTime(t, "DeadAt", got.DeadAt, parkedAt)
	h.wantCounters("ns", counters{}) // the claim gave its quota back when it finished

	// Out of the due index: nothing is due, ever, and no sweep takes it.
	h.clock.Advance(1000 * time.Hour)
	if bs := h.beginCollect(10, time.Minute); len(bs) != 0 {
		t.Errorf("BeginCollect took parked blobs %v", blobIDs(bs))
	}
	if oldest, err := h.s.OldestDue(h.ctx()); err != nil || !oldest.IsZero() {
		t.Errorf("OldestDue = %v, %v; want zero: a parked blob is not due", oldest, err)
	}
	if n, err := h.s.CountDeadLetters(h.ctx()); err != nil || n != 1 {
		t.Errorf("CountDeadLetters = %d, %v; want 1", n, err)
	}
	if ids := h.deadLetterIDs(""); !slices.Equal(ids, []string{b.ID}) {
		t.Errorf("DeadLetters = %v, want [%s]", ids, b.ID)
	}
	// Still owned: the backstop's key lookup finds the row.
	if owners, err := h.s.BlobsByKeys(h.ctx(), []string{b.Key}); err != nil || owners[b.Key].ID != b.ID {
		t.Errorf("BlobsByKeys(%s) = %v, %v; a parked blob still owns its object", b.Key, owners, err)
	}

	back, err := h.s.RetryDeadLetters(h.ctx(), []string{b.ID, "b_unknown"}, false, h.now())
	if err != nil {
		t.Fatalf("RetryDeadLetters: %v", err)
	}
	if len(back) != 1 || back[0].ID != b.ID || back[0].Attempts != 2 || back[0].DeadAt.IsZero() {
		t.Fatalf("RetryDeadLetters = %+v, want blob %s as it was parked", back, b.ID)
	}
	got = h.blob(b.ID)
	if got.State != meta.BlobDeleting || got.Attempts != 0 || got.LastError != "access denied" || !got.DeadAt.IsZero() {
		t.Errorf("retried blob = %+v, want deleting, attempts reset, error kept, not parked", got)
	}
	wantTime(t, "CollectAt after retry", got.CollectAt, h.now())
	if again, err := h.s.RetryDeadLetters(h.ctx(), []string{b.ID}, false, h.now()); err != nil || len(again) != 0 {
		t.Errorf("second RetryDeadLetters = %v, %v; want nothing", blobIDs(again), err)
	}
	if bs := h.beginCollect(10, time.Minute); !slices.Equal(blobIDs(bs), []string{b.ID}) {
		t.Fatalf("BeginCollect after retry = %v, want [%s]", blobIDs(bs), b.ID)
	}
	if err := h.s.FinishCollect(h.ctx(), []string{b.ID}, h.now()); err != nil {
		t.Fatal(err)
	}
	if got := h.blob(b.ID); got.State != meta.BlobDeleted {
		t.Errorf("blob after collection = %s, want deleted", got.State)
	}
	if n, err := h.s.CountDeadLetters(h.ctx()); err != nil || n != 0 {
		t.Errorf("CountDeadLetters after retry = %d, %v; want 0", n, err)
	}
}

func testRetryAllDeadLetters(t *testing.T, h *harness) {
	var want, inB []string
	for i := range 3 {
		ns := "a"
		if i == 1 {
			ns = "b"
		}
		b := h.deletingIn(ns)
		if err := h.s.ParkBlob(h.ctx(), b.ID, "boom", h.now()); err != nil {
			t.Fatalf("ParkBlob: %v", err)
		}
		want = append(want, b.ID)
		if ns == "b" {
			inB = append(inB, b.ID)
		}
	}
	slices.Sort(want)
	if ids := h.deadLetterIDs(""); !slices.Equal(ids, want) {
		t.Errorf("DeadLetters = %v, want %v", ids, want)
	}
	if ids := h.deadLetterIDs("b"); !slices.Equal(ids, inB) {
		t.Errorf("DeadLetters of namespace b = %v, want %v", ids, inB)
	}
	if ids := h.deadLetterIDs("c"); len(ids) != 0 {
		t.Errorf("DeadLetters of namespace c = %v, want none", ids)
	}
	if none, err := h.s.RetryDeadLetters(h.ctx(), nil, false, h.now()); err != nil || len(none) != 0 {
		t.Errorf("RetryDeadLetters without ids and without all = %v, %v; want nothing", blobIDs(none), err)
	}
	back, err := h.s.RetryDeadLetters(h.ctx(), nil, true, h.now())
	if err != nil {
		t.Fatalf("RetryDeadLetters(all): %v", err)
	}
	if ids := blobIDs(back); !slices.Equal(ids, want) {
		t.Errorf("RetryDeadLetters(all) = %v, want %v", ids, want)
	}
	if ids := h.deadLetterIDs(""); len(ids) != 0 {
		t.Errorf("DeadLetters after retrying all = %v", ids)
	}
	if bs := h.beginCollect(10, time.Minute); len(bs) != 3 {
		t.Errorf("BeginCollect after retrying all took %d blobs, want 3", len(bs))
	}
}

func testParkConflicts(t *testing.T, h *harness) {
	live := h.put(put{})
	wantErr(t, "ParkBlob of a committed blob", h.s.ParkBlob(h.ctx(), live.Blob.ID, "x", h.now()), meta.ErrConflict)
	if got := h.blob(live.Blob.ID); got.State != meta.BlobCommitted || !got.DeadAt.IsZero() || got.Attempts != 0 {
		t.Errorf("ParkBlob changed a committed blob: %+v", got)
	}
	wantErr(t, "ParkBlob of an unknown blob", h.s.ParkBlob(h.ctx(), "b_missing", "x", h.now()), meta.ErrNotFound)
	if n, err := h.s.CountDeadLetters(h.ctx()); err != nil || n != 0 {
		t.Errorf("CountDeadLetters = %d, %v; want 0", n, err)
	}
}

// testQuotaAudit: the counters Namespaces lists equal the sums
// CountNamespaces recomputes from the claims, after puts, pending
// reservations and finishes in two namespaces.
func testQuotaAudit(t *testing.T, h *harness) {
	h.put(put{NS: "b", Size: 10})
	h.put(put{NS: "b", Size: 20})
	gone := h.put(put{NS: "b", Size: 40})
	h.finish(gone.Claim.ID, meta.ReasonDeleted)
	h.pending(put{NS: "b", Reserve: 7})
	h.pending(put{NS: "a", Reserve: 5})
	reaped := h.pending(put{NS: "a", Reserve: 3})
	h.finish(reaped.Claim.ID, meta.ReasonNeverConfirmed)

	want := []meta.Namespace{
		{Name: "a", ReservedBytes: 5, PendingClaims: 1, FinishedClaims: 1},
		{Name: "b", UsedBytes: 30, ReservedBytes: 7, ActiveClaims: 2, PendingClaims: 1, FinishedClaims: 1},
	}
	got, err := h.s.Namespaces(h.ctx())
	if err != nil {
		t.Fatalf("Namespaces: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Namespaces = %+v, want %+v", got, want)
	}
	counted, err := h.s.CountNamespaces(h.ctx())
	if err != nil {
		t.Fatalf("CountNamespaces: %v", err)
	}
	// The finished counter is history, which the live claims cannot
	// recompute: CountNamespaces leaves it 0.
	for i := range want {
		want[i].FinishedClaims = 0
	}
	if !slices.Equal(counted, want) {
		t.Errorf("CountNamespaces = %+v, want %+v", counted, want)
	}
	if drift, err := h.s.QuotaDrift(h.ctx()); err != nil || len(drift) != 0 {
		t.Errorf("QuotaDrift = %+v, %v; want none", drift, err)
	}
}

// testReaperRacesCommit: the reaper (FinishDueClaims) and put step 3
// (Commit) race for the same due pending claim, many times. Both are
// compare-and-swaps on pending: exactly one wins, the loser sees a
// conflict (Commit) or nothing to do (the reaper), and the reservation is
// turned into usage or refunded, never both.
func testReaperRacesCommit(t *testing.T, h *harness) {
	for round := range 40 {
		p := put{Size: 100}.withDefaults()
		cp := h.pending(p)
		h.clock.Advance(2 * time.Hour) // past the upload deadline: due
		var (
			wg        sync.WaitGroup
			reaped    []meta.FinishResult
			commitErr error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			var err error
			reaped, err = h.s.FinishDueClaims(h.ctx(), h.now(), 10)
			if err != nil {
				t.Errorf("FinishDueClaims: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			_, commitErr = h.s.Commit(h.ctx(), h.commitParams(cp, p))
		}()
		wg.Wait()
		c := h.claim(cp.Claim.ID)
		switch {
		case commitErr == nil && len(reaped) == 0:
			if c.State != meta.ClaimActive {
				t.Fatalf("round %d: commit won but the claim is %s", round, c.State)
			}
			h.finish(c.ID, meta.ReasonDeleted) // clear it for the next round
		case errors.Is(commitErr, meta.ErrConflict) && len(reaped) == 1:
			if c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonNeverConfirmed {
				t.Fatalf("round %d: the reaper won but the claim is %s (%s)", round, c.State, c.DeleteReason)
			}
		default:
			t.Fatalf("round %d: commit error %v and %d reaped: want exactly one winner", round, commitErr, len(reaped))
		}
		h.wantCounters("ns", counters{})
	}
}
