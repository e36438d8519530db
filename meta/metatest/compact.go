package metatest

import (
	"errors"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// testCompactHistory: a finished claim older than the cut becomes a
// tombstone (ADR 0263) that still answers finished, with its namespace,
// reason and time; its labels, releases and upload go, so does its
// collected blob's row; its events stay. Live claims, claims finished
// after the cut and blobs still in use are untouched, and a tombstone
// goes with the history retention.
func testCompactHistory(t *testing.T, h *harness) {
	ctx := h.ctx()
	labelled := h.put(put{Labels: map[string]string{"team": "billing"}, Grace: time.Hour})
	res, _ := h.finish(labelled.Claim.ID, meta.ReasonDeleted)
	finishedAt := res.Claim.DeletedAt
	collected := h.beginCollect(10, time.Minute)
	if len(collected) != 0 {
		t.Fatalf("BeginCollect = %v, want nothing within the grace period", blobIDs(collected))
	}
	released := h.put(put{Consumers: 2, Grace: time.Minute})
	h.release(released.Claim.ID, "billing")
	h.finish(released.Claim.ID, meta.ReasonReleased)
	h.clock.Advance(2 * time.Minute)
	if got := h.beginCollect(10, time.Minute); len(got) != 1 || got[0].ID != released.Blob.ID {
		t.Fatalf("BeginCollect = %v, want %s", blobIDs(got), released.Blob.ID)
	}
	if err := h.s.FinishCollect(ctx, []string{released.Blob.ID}, h.now()); err != nil {
		t.Fatal(err)
	}
	shared := put{Dedup: true}.withDefaults()
	first := h.put(shared)
	second := h.put(shared)
	h.finish(first.Claim.ID, meta.ReasonExpired)
	cut := h.now().Add(time.Second)
	h.clock.Advance(time.Hour)
	late := h.put(put{})
	h.finish(late.Claim.ID, meta.ReasonDeleted)
	live := h.put(put{})

	n, err := h.s.CompactHistory(ctx, cut, 2)
	if err != nil || n != 2 {
		t.Fatalf("CompactHistory(limit 2) = %d, %v; want 2", n, err)
	}
	more, err := h.s.CompactHistory(ctx, cut, 100)
	if err != nil || n+more != 3 {
		t.Fatalf("CompactHistory twice = %d then %d, %v; want 3 claims in all", n, more, err)
	}
	if n, err := h.s.CompactHistory(ctx, cut, 100); err != nil || n != 0 {
		t.Errorf("third CompactHistory = %d, %v; want nothing left", n, err)
	}

	c := h.claim(labelled.Claim.ID)
	if c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonDeleted || c.Namespace != "ns" ||
		!c.DeletedAt.Equal(finishedAt) || c.BlobID != "" || len(c.Labels) != 0 {
		t.Errorf("compacted claim = %+v; want finished (deleted) at %v in ns, and nothing else", c, finishedAt)
	}
	if c := h.claim(released.Claim.ID); c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonReleased {
		t.Errorf("compacted released claim = %s, %s", c.State, c.DeleteReason)
	}
	// A finish of a tombstone changes nothing.
	if _, done, err := h.s.FinishClaim(ctx, labelled.Claim.ID, meta.ReasonDeleted, h.now(), false); err != nil || done {
		t.Errorf("FinishClaim of a tombstone = %v, %v; want not done", done, err)
	}
	if _, err := h.s.Release(ctx, released.Claim.ID, "audit", h.now()); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("Release of a tombstone: %v, want ErrConflict", err)
	}
	// The collected blob's row went with its claim; the blob that still
	// has an orphaned object (grace period) and the shared one stay.
	if _, err := h.s.Blob(ctx, released.Blob.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("collected blob after compaction: %v, want ErrNotFound", err)
	}
	if b := h.blob(labelled.Blob.ID); b.State != meta.BlobOrphaned {
		t.Errorf("orphaned blob after compaction: %s, want orphaned", b.State)
	}
	if b := h.blob(first.Blob.ID); b.State != meta.BlobCommitted {
		t.Errorf("shared blob after compaction: %s, want committed", b.State)
	}
	for _, id := range []string{second.Claim.ID, live.Claim.ID} {
		if c := h.claim(id); c.State != meta.ClaimActive {
			t.Errorf("live claim %s after compaction: %s", id, c.State)
		}
	}
	if c := h.claim(late.Claim.ID); c.BlobID != late.Blob.ID {
		t.Errorf("a claim finished after the cut must keep its row: %+v", c)
	}
	// The audit trail stays whole.
	evs, err := h.s.ClaimEvents(ctx, released.Claim.ID, 0, 10)
	if err != nil || len(evs) < 3 || evs[len(evs)-1].Reason != meta.ReasonReleased {
		t.Errorf("events of a compacted claim: %+v, %v; want created, released and the finish", evs, err)
	}
	h.forget(labelled.Claim.ID, released.Claim.ID, released.Blob.ID, first.Claim.ID)

	// History retention takes the tombstones (a whole day where the
	// store keeps them by day).
	pr := h.pruneHistory(cut.Add(48*time.Hour), 100)
	if pr.Tombstones+pr.TombstoneDays == 0 {
		t.Errorf("PruneHistory = %+v, want the tombstones pruned", pr)
	}
	for _, id := range []string{labelled.Claim.ID, released.Claim.ID, first.Claim.ID, late.Claim.ID} {
		h.wantClaimGone(id)
	}
	h.forget(late.Claim.ID)
}

// testCompactHistoryHeld: a claim whose events an enabled, active
// subscription has not delivered keeps its row (the feed reads its
// labels) until the cursor passes them.
func testCompactHistoryHeld(t *testing.T, h *harness) {
	ctx := h.ctx()
	start := h.now()
	sub := meta.Subscription{ID: "s1", Tenant: "default", URL: "http://127.0.0.1/", Secret: []byte("whsec_x"), Enabled: true,
		CreatedAt: start, Cursor: start.UnixNano() - 1, State: meta.SubscriptionActive}
	if err := h.s.CreateSubscription(ctx, sub, 0); err != nil {
		t.Fatal(err)
	}
	done := h.put(put{Labels: map[string]string{"team": "billing"}})
	h.finish(done.Claim.ID, meta.ReasonDeleted)
	h.clock.Advance(time.Hour)
	if n, err := h.s.CompactHistory(ctx, h.now(), 100); err != nil || n != 0 {
		t.Fatalf("CompactHistory under an undelivered subscription = %d, %v; want 0", n, err)
	}
	feed, err := h.s.FeedEvents(ctx, "", sub.Cursor, h.now().UnixNano(), 100, true)
	if err != nil || len(feed) == 0 || feed[0].Labels["team"] != "billing" {
		t.Fatalf("feed: %+v, %v; want the claim's events with its labels", feed, err)
	}
	// The dispatcher has looked at everything up to now.
	if err := h.s.AdvanceSubscription(ctx, "default", "s1", meta.SubscriptionProgress{Cursor: h.now().UnixNano(), State: meta.SubscriptionActive}); err != nil {
		t.Fatal(err)
	}
	if n, err := h.s.CompactHistory(ctx, h.now(), 100); err != nil || n != 1 {
		t.Fatalf("CompactHistory once delivered = %d, %v; want 1", n, err)
	}
	h.forget(done.Claim.ID)
}

// testFeedSameSeq: events of different namespaces may share a seq (a
// store that keys events by namespace and seq); paging the feed by seq
// with a small page still yields each event once.
func testFeedSameSeq(t *testing.T, h *harness) {
	ctx := h.ctx()
	at := h.now()
	for _, e := range []meta.Event{
		{At: at.Add(-time.Nanosecond), Kind: "key_created", Tenant: "acme"},
		{At: at, Kind: meta.EventCreated, Namespace: "a", ClaimID: "c_a"},
		{At: at, Kind: meta.EventCreated, Namespace: "b", ClaimID: "c_b"},
		{At: at.Add(time.Nanosecond), Kind: meta.EventCreated, Namespace: "c", ClaimID: "c_c"},
	} {
		// One call each: events of one call never share a seq.
		if err := h.s.AppendEvents(ctx, []meta.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	cursor := int64(0)
	for range 10 {
		page, err := h.s.FeedEvents(ctx, "", cursor, at.Add(time.Hour).UnixNano(), 2, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			seen[e.Namespace+e.Tenant]++
		}
		cursor = page[len(page)-1].Seq
	}
	if len(seen) != 4 || seen["a"] != 1 || seen["b"] != 1 || seen["c"] != 1 || seen["acme"] != 1 {
		t.Errorf("feed in pages of 2: %v; want each of acme, a, b, c once", seen)
	}
}
