package metatest

import (
	"errors"
	"slices"
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
	if err := h.s.CreateSubscription(ctx, sub, 0); err != nil {
		t.Fatal(err)
	}
	if err := h.s.CreateSubscription(ctx, sub, 0); !errors.Is(err, meta.ErrConflict) {
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
	if err := h.s.AdvanceSubscription(ctx, "acme", "s1", meta.SubscriptionProgress{Cursor: 1, State: meta.SubscriptionActive}); err != nil {
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

// testSubscriptionsByTenant: ids are unique per tenant (ADR 0269), a
// tenant's count is held to its limit in the same transaction as the
// insert, pages follow the id, and a configured subscription is neither
// resumed nor deleted through the API's operations.
func testSubscriptionsByTenant(t *testing.T, h *harness) {
	ctx := h.ctx()
	mk := func(tenant, id, source string) meta.Subscription {
		return meta.Subscription{ID: id, Tenant: tenant, URL: "http://127.0.0.1/", Secret: []byte("whsec_x"), Enabled: true,
			Source: source, CreatedAt: h.now(), Cursor: h.now().UnixNano(), State: meta.SubscriptionActive}
	}
	if err := h.s.CreateSubscription(ctx, mk("tb", "b-private", meta.SourceAPI), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.s.CreateSubscription(ctx, mk("ta", "b-private", meta.SourceAPI), 0); err != nil {
		t.Fatalf("another tenant's id: %v, want it free in this tenant", err)
	}
	if err := h.s.CreateSubscription(ctx, mk("ta", "b-private", meta.SourceAPI), 0); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("the tenant's own id again: %v, want ErrConflict", err)
	}
	for _, id := range []string{"a1", "a2"} {
		if err := h.s.CreateSubscription(ctx, mk("ta", id, meta.SourceAPI), 3); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.s.CreateSubscription(ctx, mk("ta", "a3", meta.SourceAPI), 3); !errors.Is(err, meta.ErrLimitReached) {
		t.Fatalf("past the limit: %v, want ErrLimitReached", err)
	}
	// The operator's targets are in their own id space and count for
	// nothing against the tenant's limit.
	cfg := mk("ta", meta.ConfigIDPrefix+"ops", meta.SourceConfig)
	cfg.Enabled = false
	if err := h.s.SyncConfigSubscriptions(ctx, []meta.Subscription{cfg}); err != nil {
		t.Fatal(err)
	}
	if err := h.s.ResumeSubscription(ctx, "ta", cfg.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("resume of a configured subscription: %v, want ErrNotFound", err)
	}
	if err := h.s.DeleteSubscription(ctx, "ta", cfg.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("delete of a configured subscription: %v, want ErrNotFound", err)
	}
	var ids []string
	for after := ""; ; {
		page, err := h.s.SubscriptionPage(ctx, "ta", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, s := range page {
			ids = append(ids, s.ID)
			if s.ID == cfg.ID && s.Enabled {
				t.Errorf("configured subscription enabled: %+v", s)
			}
		}
		after = page[len(page)-1].ID
	}
	if want := []string{"a1", "a2", "b-private", cfg.ID}; !slices.Equal(ids, want) {
		t.Errorf("pages of ta: %v, want %v", ids, want)
	}
	if err := h.s.SyncConfigSubscriptions(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ tenant, id string }{{"ta", "a1"}, {"ta", "a2"}, {"ta", "b-private"}, {"tb", "b-private"}} {
		if err := h.s.DeleteSubscription(ctx, s.tenant, s.id); err != nil {
			t.Error(err)
		}
	}
}
