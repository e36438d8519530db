package metatest

import (
	"errors"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// testSubscriptionsHoldPruning: an enabled, active subscription keeps
// the events after its cursor from being pruned; once MarkLagging finds
// its cursor past the bound it no longer does (ADR 0240). The feed
// answers a tenant's events only, and the cursor never moves back.
func testSubscriptionsHoldPruning(t *testing.T, h *harness) {
	ctx := h.ctx()
	start := h.now()
	if err := h.s.AppendEvents(ctx, []meta.Event{
		{At: start, Kind: "key_created", Tenant: "acme"},
		{At: start.Add(time.Second), Kind: "key_created", Tenant: "acme"},
		{At: start.Add(2 * time.Second), Kind: "key_created", Tenant: "beta"},
	}); err != nil {
		t.Fatal(err)
	}
	sub := meta.Subscription{ID: "s1", Tenant: "acme", URL: "http://127.0.0.1/", Secret: []byte("whsec_x"), Enabled: true,
		CreatedAt: start, Cursor: start.UnixNano(), State: meta.SubscriptionActive}
	if err := h.s.CreateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if err := h.s.CreateSubscription(ctx, sub); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("a taken id: %v, want ErrConflict", err)
	}
	feed, err := h.s.FeedEvents(ctx, "acme", 0, start.Add(time.Hour).UnixNano(), 100, true)
	if err != nil || len(feed) != 2 || feed[0].Tenant != "acme" || feed[1].Tenant != "acme" {
		t.Fatalf("acme's feed: %+v, %v", feed, err)
	}

	// Retention has passed for every event, but s1 has only taken the
	// first: the other two stay.
	h.clock.Advance(time.Hour)
	if _, err := h.s.PruneEvents(ctx, h.now(), 100); err != nil {
		t.Fatal(err)
	}
	left, err := h.s.FeedEvents(ctx, "", 0, h.now().UnixNano(), 100, false)
	if err != nil || len(left) != 2 || left[0].Seq <= sub.Cursor {
		t.Fatalf("after pruning: %+v, %v; want the two events after the cursor", left, err)
	}
	// The cursor never moves back.
	if err := h.s.AdvanceSubscription(ctx, "s1", meta.SubscriptionProgress{Cursor: 1, State: meta.SubscriptionActive}); err != nil {
		t.Fatal(err)
	}
	subs, err := h.s.Subscriptions(ctx, "acme")
	if err != nil || len(subs) != 1 || subs[0].Cursor != sub.Cursor {
		t.Fatalf("subscriptions: %+v, %v; want the cursor kept", subs, err)
	}
	// Past the lag bound: lagging, and pruning goes on.
	n, err := h.s.MarkLagging(ctx, h.now().Add(-30*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("MarkLagging = %d, %v; want 1", n, err)
	}
	if _, err := h.s.PruneEvents(ctx, h.now(), 100); err != nil {
		t.Fatal(err)
	}
	if left, err := h.s.FeedEvents(ctx, "", 0, h.now().UnixNano(), 100, false); err != nil || len(left) != 0 {
		t.Fatalf("after pruning past a lagging subscription: %+v, %v", left, err)
	}
	if err := h.s.DeleteSubscription(ctx, "beta", "s1"); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("another tenant's delete: %v, want ErrNotFound", err)
	}
	if err := h.s.DeleteSubscription(ctx, "acme", "s1"); err != nil {
		t.Error(err)
	}
}
