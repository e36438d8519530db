package metatest

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// read records one read of id at the harness's now, naming the claim's
// namespace as the engine does, and returns the claim as stored
// afterwards.
func (h *harness) read(id string) meta.Claim {
	h.t.Helper()
	skipped, err := h.s.RecordReads(h.ctx(), []meta.Read{{ClaimID: id, Namespace: h.claim(id).Namespace, At: h.now()}})
	if err != nil || len(skipped) != 0 {
		h.t.Fatalf("RecordReads(%s): skipped %v, %v", id, skipped, err)
	}
	return h.claim(id)
}

func (h *harness) release(id, consumer string) meta.Claim {
	h.t.Helper()
	c, err := h.s.Release(h.ctx(), id, consumer, h.now())
	if err != nil {
		h.t.Fatalf("Release(%s, %s): %v", id, consumer, err)
	}
	return c
}

// wantDue checks a claim's due time and reason, both as returned and as
// stored.
func (h *harness) wantDue(returned meta.Claim, due time.Time, reason string) {
	h.t.Helper()
	for _, c := range []meta.Claim{returned, h.claim(returned.ID)} {
		if !c.DueAt.Equal(due) || c.DueReason != reason {
			h.t.Errorf("claim %s due %v (%s), want %v (%s)", c.ID, c.DueAt, c.DueReason, due, reason)
		}
	}
}

func testRecordRead(t *testing.T, h *harness) {
	res := h.put(put{Retention: 5 * time.Minute})
	h.clock.Advance(time.Minute)
	c := h.read(res.Claim.ID)
	if c.Reads != 1 {
		t.Errorf("Reads = %d, want 1", c.Reads)
	}
	wantTime(t, "FirstReadAt", c.FirstReadAt, epoch.Add(time.Minute))
	wantTime(t, "LastReadAt", c.LastReadAt, epoch.Add(time.Minute))
	// Without delete_after_read a read does not move the due time.
	h.wantDue(c, epoch.Add(24*time.Hour), meta.ReasonExpired)

	h.clock.Advance(time.Minute)
	c = h.read(res.Claim.ID)
	stored := h.claim(res.Claim.ID)
	for _, c := range []meta.Claim{c, stored} {
		if c.Reads != 2 {
			t.Errorf("Reads = %d, want 2", c.Reads)
		}
		wantTime(t, "FirstReadAt", c.FirstReadAt, epoch.Add(time.Minute))
		wantTime(t, "LastReadAt", c.LastReadAt, epoch.Add(2*time.Minute))
	}
	wantTime(t, "ExpiresAt", stored.ExpiresAt, epoch.Add(24*time.Hour))
}

func testRecordReadDeleteAfterRead(t *testing.T, h *harness) {
	res := h.put(put{DeleteAfterRead: true, Retention: 5 * time.Minute})
	h.clock.Advance(time.Minute)
	c := h.read(res.Claim.ID)
	h.wantDue(c, epoch.Add(6*time.Minute), meta.ReasonReadRetention)

	// Redelivery inside the window succeeds and does not extend it.
	h.clock.Advance(3 * time.Minute)
	c = h.read(res.Claim.ID)
	if c.Reads != 2 {
		t.Errorf("Reads = %d, want 2", c.Reads)
	}
	h.wantDue(c, epoch.Add(6*time.Minute), meta.ReasonReadRetention)

	// At the due time the claim is finished (the engine does it in-line
	// before serving a read).
	h.clock.Set(epoch.Add(6 * time.Minute))
	fr, done, err := h.s.FinishClaim(h.ctx(), res.Claim.ID, "", h.now(), true)
	if err != nil || !done {
		t.Fatalf("FinishClaim onlyIfDue: done=%v err=%v", done, err)
	}
	if fr.Claim.DeleteReason != meta.ReasonReadRetention {
		t.Errorf("DeleteReason = %q, want %q", fr.Claim.DeleteReason, meta.ReasonReadRetention)
	}
	wantTime(t, "ExpiresAt", h.claim(res.Claim.ID).ExpiresAt, epoch.Add(24*time.Hour))
}

func testRecordReadDueOnlyMovesEarlier(t *testing.T, h *harness) {
	res := h.put(put{MaxAge: 10 * time.Minute, DeleteAfterRead: true, Retention: time.Hour})
	c := h.read(res.Claim.ID)
	h.wantDue(c, epoch.Add(10*time.Minute), meta.ReasonExpired)
	wantTime(t, "ExpiresAt", c.ExpiresAt, epoch.Add(10*time.Minute))
}

func testRecordReadsBatch(t *testing.T, h *harness) {
	a := h.put(put{DeleteAfterRead: true, Retention: 5 * time.Minute})
	b := h.put(put{})
	h.clock.Advance(time.Minute)
	// Reads of one batch may arrive out of order: the earliest is the first.
	skipped, err := h.s.RecordReads(h.ctx(), []meta.Read{
		{ClaimID: a.Claim.ID, Namespace: "ns", At: epoch.Add(2 * time.Minute)},
		{ClaimID: b.Claim.ID, Namespace: "ns", At: epoch.Add(time.Minute)},
		{ClaimID: a.Claim.ID, Namespace: "ns", At: epoch.Add(time.Minute)},
	})
	if err != nil || len(skipped) != 0 {
		t.Fatalf("RecordReads: skipped %v, %v", skipped, err)
	}
	ca := h.claim(a.Claim.ID)
	if ca.Reads != 2 || h.claim(b.Claim.ID).Reads != 1 {
		t.Errorf("reads: a=%d b=%d, want 2 and 1", ca.Reads, h.claim(b.Claim.ID).Reads)
	}
	wantTime(t, "FirstReadAt", ca.FirstReadAt, epoch.Add(time.Minute))
	wantTime(t, "LastReadAt", ca.LastReadAt, epoch.Add(2*time.Minute))
	h.wantDue(ca, epoch.Add(6*time.Minute), meta.ReasonReadRetention)
}

func testRecordReadsSkips(t *testing.T, h *harness) {
	cp := h.pending(put{})
	done := h.put(put{MaxAge: time.Hour})
	h.finish(done.Claim.ID, meta.ReasonExpired)
	due := h.put(put{MaxAge: time.Hour})
	h.clock.Set(epoch.Add(time.Hour))

	skipped, err := h.s.RecordReads(h.ctx(), []meta.Read{
		{ClaimID: cp.Claim.ID, Namespace: "ns", At: h.now()},
		{ClaimID: done.Claim.ID, Namespace: "ns", At: h.now()},
		{ClaimID: "c_missing", Namespace: "ns", At: h.now()},
		{ClaimID: due.Claim.ID, Namespace: "ns", At: h.now()}, // served just before it fell due: counts
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(skipped, []string{cp.Claim.ID, done.Claim.ID, "c_missing"}) {
		t.Errorf("skipped %v, want the pending, the deleted and the unknown claim", skipped)
	}
	for _, id := range []string{cp.Claim.ID, done.Claim.ID} {
		if c := h.claim(id); c.Reads != 0 || !c.FirstReadAt.IsZero() {
			t.Errorf("skipped read was counted: %+v", c)
		}
	}
	if c := h.claim(due.Claim.ID); c.Reads != 1 {
		t.Errorf("read of an active claim that is due by now: Reads = %d, want 1", c.Reads)
	}
}

// testRecordReadsNamespaces: a batch holds reads of several namespaces,
// interleaved as concurrent redeems queue them; each read of a claim in
// the namespace it names counts once, with its events, and the skipped
// list keeps the batch's order. A read that names a namespace other than
// its claim's finds no claim there and is skipped; a read that names none
// finds its claim by id alone, or takes the namespace the context names.
func testRecordReadsNamespaces(t *testing.T, h *harness) {
	a := h.put(put{NS: "a", DeleteAfterRead: true, Retention: 5 * time.Minute}).Claim.ID
	b := h.put(put{NS: "b"}).Claim.ID
	h.clock.Advance(time.Minute)
	at := h.now()
	skipped, err := h.s.RecordReads(h.ctx(), []meta.Read{
		{ClaimID: a, Namespace: "a", At: at, Actor: "r1"},
		{ClaimID: "c_missing", Namespace: "b", At: at},
		{ClaimID: b, Namespace: "b", At: at, Actor: "r2"},
		{ClaimID: b, Namespace: "a", At: at, Actor: "r3"},  // not b's namespace
		{ClaimID: a, At: at.Add(time.Second), Actor: "r4"}, // no namespace: by id alone
	})
	if err != nil || !slices.Equal(skipped, []string{"c_missing", b}) {
		t.Fatalf("RecordReads: skipped %v, %v; want c_missing and the read of %s in namespace a", skipped, err, b)
	}
	ca, cb := h.claim(a), h.claim(b)
	if ca.Reads != 2 || cb.Reads != 1 {
		t.Errorf("reads: a=%d b=%d, want 2 and 1", ca.Reads, cb.Reads)
	}
	wantTime(t, "FirstReadAt", ca.FirstReadAt, at)
	wantTime(t, "LastReadAt", ca.LastReadAt, at.Add(time.Second))
	h.wantDue(ca, at.Add(5*time.Minute), meta.ReasonReadRetention)
	redeems := func(id string) []string {
		var out []string
		for _, e := range h.claimEvents(id) {
			if strings.HasPrefix(e, meta.EventRedeemed+"/") || strings.HasPrefix(e, meta.EventFirstRedeemed+"/") {
				out = append(out, e)
			}
		}
		return out
	}
	wantEvents(t, "claim of namespace a", redeems(a), "redeemed/r1", "first_redeemed/r1", "redeemed/r4")
	wantEvents(t, "claim of namespace b", redeems(b), "redeemed/r2", "first_redeemed/r2")

	// Reads without a namespace on a context that names one: as if they
	// named it.
	skipped, err = h.s.RecordReads(meta.WithNamespace(h.ctx(), "b"), []meta.Read{
		{ClaimID: a, At: at.Add(2 * time.Second)},
		{ClaimID: b, At: at.Add(2 * time.Second)},
	})
	if err != nil || !slices.Equal(skipped, []string{a}) {
		t.Fatalf("RecordReads in namespace b: skipped %v, %v; want %s, of namespace a", skipped, err, a)
	}
	if ca, cb := h.claim(a), h.claim(b); ca.Reads != 2 || cb.Reads != 2 {
		t.Errorf("reads after the batch in namespace b: a=%d b=%d, want 2 and 2", ca.Reads, cb.Reads)
	}
}

// testRecordReadsNamespacesSameInstant: reads of two namespaces served
// in the nanosecond their claims were created, so that their events'
// numbers meet the created events' (a store that numbers events by time
// renumbers them): each read counts once, and each claim's events stay
// in order.
func testRecordReadsNamespacesSameInstant(t *testing.T, h *harness) {
	a := h.put(put{NS: "a"}).Claim.ID
	b := h.put(put{NS: "b"}).Claim.ID
	at := h.now()
	skipped, err := h.s.RecordReads(h.ctx(), []meta.Read{
		{ClaimID: a, Namespace: "a", At: at, Actor: "r1"},
		{ClaimID: b, Namespace: "b", At: at, Actor: "r2"},
		{ClaimID: a, Namespace: "a", At: at, Actor: "r3"},
	})
	if err != nil || len(skipped) != 0 {
		t.Fatalf("RecordReads: skipped %v, %v", skipped, err)
	}
	if ca, cb := h.claim(a), h.claim(b); ca.Reads != 2 || cb.Reads != 1 {
		t.Errorf("reads: a=%d b=%d, want 2 and 1", ca.Reads, cb.Reads)
	}
	wantEvents(t, "claim of namespace a", h.claimEvents(a)[1:], "redeemed/r1", "first_redeemed/r1", "redeemed/r3")
	wantEvents(t, "claim of namespace b", h.claimEvents(b)[1:], "redeemed/r2", "first_redeemed/r2")
}

func testReleaseIdempotent(t *testing.T, h *harness) {
	res := h.put(put{Retention: 5 * time.Minute})
	h.clock.Advance(time.Minute)
	c := h.release(res.Claim.ID, "worker")
	h.wantDue(c, epoch.Add(6*time.Minute), meta.ReasonReleased)
	if !slices.Equal(c.ReleasedBy, []string{"worker"}) {
		t.Errorf("ReleasedBy = %v", c.ReleasedBy)
	}
	// The same name again changes nothing, not even the due time.
	h.clock.Advance(time.Minute)
	c = h.release(res.Claim.ID, "worker")
	h.wantDue(c, epoch.Add(6*time.Minute), meta.ReasonReleased)
	if got := h.claim(res.Claim.ID).ReleasedBy; !slices.Equal(got, []string{"worker"}) {
		t.Errorf("ReleasedBy after repeat = %v", got)
	}
}

func testReleaseFanOut(t *testing.T, h *harness) {
	res := h.put(put{Consumers: 3, Retention: 5 * time.Minute})
	h.release(res.Claim.ID, "a")
	h.clock.Advance(time.Minute)
	h.release(res.Claim.ID, "b")
	c := h.release(res.Claim.ID, "a")
	h.wantDue(c, epoch.Add(24*time.Hour), meta.ReasonExpired)
	h.clock.Advance(time.Minute)
	c = h.release(res.Claim.ID, "c")
	h.wantDue(c, epoch.Add(7*time.Minute), meta.ReasonReleased)
	if got := h.claim(res.Claim.ID).ReleasedBy; !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("ReleasedBy = %v, want [a b c] in release order", got)
	}
	// A fourth name after the claim is released moves nothing.
	h.clock.Advance(time.Minute)
	c = h.release(res.Claim.ID, "d")
	h.wantDue(c, epoch.Add(7*time.Minute), meta.ReasonReleased)
}

// testReleaseOrder checks that a claim lists its releases in the order
// they happened, not in the order of the names.
func testReleaseOrder(t *testing.T, h *harness) {
	res := h.put(put{Consumers: 3})
	for _, name := range []string{"c", "a", "b"} {
		h.release(res.Claim.ID, name)
	}
	if got := h.claim(res.Claim.ID).ReleasedBy; !slices.Equal(got, []string{"c", "a", "b"}) {
		t.Errorf("ReleasedBy = %v, want [c a b]", got)
	}
}

func testReleaseFanOutNamed(t *testing.T, h *harness) {
	res := h.put(put{Consumers: 2, ConsumerNames: []string{"billing", "search"}, Retention: time.Minute})
	h.release(res.Claim.ID, "billing")
	c := h.release(res.Claim.ID, "stranger") // not a listed name: does not count
	h.wantDue(c, epoch.Add(24*time.Hour), meta.ReasonExpired)
	c = h.release(res.Claim.ID, "billing")
	h.wantDue(c, epoch.Add(24*time.Hour), meta.ReasonExpired)
	c = h.release(res.Claim.ID, "search")
	h.wantDue(c, epoch.Add(time.Minute), meta.ReasonReleased)
	got := h.claim(res.Claim.ID).ReleasedBy
	if !slices.Contains(got, "billing") || !slices.Contains(got, "search") || slices.Contains(got, "stranger") {
		t.Errorf("ReleasedBy = %v, want billing and search only", got)
	}
}

func testReleaseConflicts(t *testing.T, h *harness) {
	cp := h.pending(put{})
	_, err := h.s.Release(h.ctx(), cp.Claim.ID, "a", h.now())
	wantErr(t, "release of pending claim", err, meta.ErrConflict)

	// A release cannot extend the due time.
	res := h.put(put{MaxAge: time.Hour, Retention: 2 * time.Hour})
	c := h.release(res.Claim.ID, "a")
	h.wantDue(c, epoch.Add(time.Hour), meta.ReasonExpired)

	h.clock.Set(epoch.Add(time.Hour))
	_, err = h.s.Release(h.ctx(), res.Claim.ID, "b", h.now())
	wantErr(t, "release of due claim", err, meta.ErrConflict)
	h.finish(res.Claim.ID, meta.ReasonExpired)
	_, err = h.s.Release(h.ctx(), res.Claim.ID, "b", h.now())
	wantErr(t, "release of deleted claim", err, meta.ErrConflict)
	_, err = h.s.Release(h.ctx(), "c_missing", "a", h.now())
	wantErr(t, "release of unknown claim", err, meta.ErrNotFound)
}

// testClaimWithBlob: ClaimWithBlob answers what Claim and Blob answer
// one by one, for a pending claim, a committed one with releases, and a
// finished one.
func testClaimWithBlob(t *testing.T, h *harness) {
	cb := h.s
	check := func(id string) {
		t.Helper()
		c, b, found, err := cb.ClaimWithBlob(h.ctx(), id)
		if err != nil || !found {
			t.Fatalf("ClaimWithBlob(%s) = found %v, %v", id, found, err)
		}
		if want := h.claim(id); !reflect.DeepEqual(c, want) {
			t.Errorf("ClaimWithBlob(%s) claim:\n got %+v\nwant %+v", id, c, want)
		}
		if want := h.blob(c.BlobID); !reflect.DeepEqual(b, want) {
			t.Errorf("ClaimWithBlob(%s) blob:\n got %+v\nwant %+v", id, b, want)
		}
	}
	pending := h.pending(put{})
	check(pending.Claim.ID)
	res := h.put(put{Consumers: 2, Digest: digestOf("claim with blob")})
	h.release(res.Claim.ID, "a")
	check(res.Claim.ID)
	h.finish(res.Claim.ID, meta.ReasonDeleted)
	check(res.Claim.ID)
	if _, _, _, err := cb.ClaimWithBlob(h.ctx(), "c_missing"); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("ClaimWithBlob(unknown) = %v, want ErrNotFound", err)
	}
}

// testClaimWithBlobConcurrent: concurrent ClaimWithBlob calls, which a
// store may answer from one statement (PostgreSQL, ADR 0160), each get
// their own claim and blob, as a call alone would; an unknown id among
// them answers ErrNotFound without disturbing the others.
func testClaimWithBlobConcurrent(t *testing.T, h *harness) {
	var ids []string
	for i := range 12 {
		if i%4 == 0 {
			ids = append(ids, h.pending(put{}).Claim.ID)
			continue
		}
		res := h.put(put{Consumers: 2})
		if i%3 == 0 {
			h.release(res.Claim.ID, "a")
		}
		ids = append(ids, res.Claim.ID)
	}
	want := map[string]meta.Claim{}
	for _, id := range ids {
		want[id] = h.claim(id)
	}
	var wg sync.WaitGroup
	for round := range 4 {
		for i, id := range append(slices.Clone(ids), "c_missing") {
			wg.Go(func() {
				c, b, found, err := h.s.ClaimWithBlob(h.ctx(), id)
				if id == "c_missing" {
					if !errors.Is(err, meta.ErrNotFound) {
						t.Errorf("round %d: ClaimWithBlob(unknown) = %v, want ErrNotFound", round, err)
					}
					return
				}
				if err != nil || !found {
					t.Errorf("round %d, call %d: ClaimWithBlob(%s) = found %v, %v", round, i, id, found, err)
					return
				}
				if !reflect.DeepEqual(c, want[id]) {
					t.Errorf("ClaimWithBlob(%s) claim:\n got %+v\nwant %+v", id, c, want[id])
				}
				if b.ID != c.BlobID {
					t.Errorf("ClaimWithBlob(%s): blob %s, claim's blob %s", id, b.ID, c.BlobID)
				}
			})
		}
	}
	wg.Wait()
}
