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

// testParkedEvents: parked events are stored whole per subscription and
// tenant, listed in seq order and paged, an event parked twice is kept
// as it was, an attempt is recorded, a retry makes every one due again,
// delivered ones are deleted, and a replay moves the cursor back (ADR
// 0277).
func testParkedEvents(t *testing.T, h *harness) {
	ctx := h.ctx()
	start := h.now()
	sub := meta.Subscription{ID: "p1", Tenant: "acme", URL: "http://127.0.0.1/", Secret: []byte("whsec_x"), Enabled: true,
		CreatedAt: start, Cursor: start.Add(time.Hour).UnixNano(), State: meta.SubscriptionActive}
	if err := h.s.CreateSubscription(ctx, sub, 0); err != nil {
		t.Fatal(err)
	}
	park := func(seq int64, claim string) meta.ParkedEvent {
		return meta.ParkedEvent{Tenant: "acme", SubscriptionID: "p1", ClaimID: claim, State: meta.ParkedWaiting,
			Event: meta.FeedEvent{Event: meta.Event{Seq: seq, At: start, Kind: "created", Namespace: "orders", ClaimID: claim},
				Labels: map[string]string{"k": "v"}}}
	}
	first := park(30, "c1")
	first.Attempts, first.FailingSince, first.NextAttempt, first.LastError = 1, start, start.Add(time.Second), "refused"
	if err := h.s.ParkEvents(ctx, []meta.ParkedEvent{first, park(10, "c2"), park(20, "c1")}); err != nil {
		t.Fatal(err)
	}
	other := park(10, "c2")
	other.Tenant = "beta"
	if err := h.s.ParkEvents(ctx, []meta.ParkedEvent{park(30, "c1"), other}); err != nil {
		t.Fatal(err)
	}
	got, err := h.s.ParkedEvents(ctx, "acme", "p1", 0, 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("parked: %+v, %v; want three", got, err)
	}
	if got[0].Event.Seq != 10 || got[1].Event.Seq != 20 || got[2].Event.Seq != 30 {
		t.Fatalf("parked out of seq order: %+v", got)
	}
	g := got[2]
	if g.ClaimID != "c1" || g.Attempts != 1 || g.LastError != "refused" || !g.FailingSince.Equal(start) ||
		!g.NextAttempt.Equal(start.Add(time.Second)) || g.Event.Kind != "created" || g.Event.Labels["k"] != "v" ||
		!g.Event.At.Equal(start) {
		t.Fatalf("parked twice: %+v, want it as first stored", g)
	}
	if page, err := h.s.ParkedEvents(ctx, "acme", "p1", 10, 1); err != nil || len(page) != 1 || page[0].Event.Seq != 20 {
		t.Fatalf("page after 10: %+v, %v", page, err)
	}
	g.State, g.Attempts, g.LastError = meta.ParkedDeadLettered, 5, "gone"
	if err := h.s.UpdateParked(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got, _ = h.s.ParkedEvents(ctx, "acme", "p1", 20, 10); len(got) != 1 || got[0].State != meta.ParkedDeadLettered || got[0].Attempts != 5 {
		t.Fatalf("after an update: %+v", got)
	}
	if n, err := h.s.RetryParked(ctx, "acme", "p1", start.Add(time.Minute)); err != nil || n != 3 {
		t.Fatalf("retry: %d, %v; want 3", n, err)
	}
	got, _ = h.s.ParkedEvents(ctx, "acme", "p1", 0, 10)
	for _, p := range got {
		if p.State != meta.ParkedWaiting || p.Attempts != 0 || !p.NextAttempt.Equal(start.Add(time.Minute)) {
			t.Fatalf("after a retry: %+v", p)
		}
	}
	if err := h.s.UnparkEvents(ctx, "acme", "p1", []int64{10, 30}); err != nil {
		t.Fatal(err)
	}
	if got, _ = h.s.ParkedEvents(ctx, "acme", "p1", 0, 10); len(got) != 1 || got[0].Event.Seq != 20 {
		t.Fatalf("after unparking 10 and 30: %+v", got)
	}
	if got, _ = h.s.ParkedEvents(ctx, "beta", "p1", 0, 10); len(got) != 1 {
		t.Fatalf("the other tenant's: %+v", got)
	}

	if err := h.s.ReplaySubscription(ctx, "acme", "p1", start.UnixNano()); err != nil {
		t.Fatal(err)
	}
	if subs, err := h.s.Subscriptions(ctx, "acme"); err != nil || len(subs) != 1 || subs[0].Cursor != start.UnixNano() {
		t.Fatalf("after a replay: %+v, %v; want the cursor moved back", subs, err)
	}
	// A round that started before the replay does not move the cursor
	// past it.
	if err := h.s.AdvanceSubscription(ctx, "acme", "p1", meta.SubscriptionProgress{From: start.Add(time.Hour).UnixNano(),
		Cursor: start.Add(2 * time.Hour).UnixNano(), State: meta.SubscriptionActive, Delivered: 1}); err != nil {
		t.Fatal(err)
	}
	if subs, err := h.s.Subscriptions(ctx, "acme"); err != nil || len(subs) != 1 || subs[0].Cursor != start.UnixNano() || subs[0].Delivered != 1 {
		t.Fatalf("a round from before the replay: %+v, %v; want the replayed cursor kept", subs, err)
	}
	if err := h.s.AdvanceSubscription(ctx, "acme", "p1", meta.SubscriptionProgress{From: start.UnixNano(),
		Cursor: start.Add(time.Second).UnixNano(), State: meta.SubscriptionActive}); err != nil {
		t.Fatal(err)
	}
	if subs, err := h.s.Subscriptions(ctx, "acme"); err != nil || len(subs) != 1 || subs[0].Cursor != start.Add(time.Second).UnixNano() {
		t.Fatalf("a round from the replayed cursor: %+v, %v; want it moved", subs, err)
	}
	if err := h.s.ReplaySubscription(ctx, "beta", "p1", 0); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("replay of another tenant's: %v, want ErrNotFound", err)
	}
	if err := h.s.DeleteSubscription(ctx, "acme", "p1"); err != nil {
		t.Fatal(err)
	}
	if got, _ = h.s.ParkedEvents(ctx, "acme", "p1", 0, 10); len(got) != 0 {
		t.Fatalf("a deleted subscription's parked events: %+v", got)
	}

	// A configured target's dead-lettered events are parked again by the
	// start (its sync), and go with the target.
	cfg := sub
	cfg.ID, cfg.Source = meta.ConfigIDPrefix+"ops", meta.SourceConfig
	if err := h.s.SyncConfigSubscriptions(ctx, []meta.Subscription{cfg}); err != nil {
		t.Fatal(err)
	}
	dead := park(40, "c3")
	dead.SubscriptionID, dead.State, dead.Attempts = cfg.ID, meta.ParkedDeadLettered, 3
	if err := h.s.ParkEvents(ctx, []meta.ParkedEvent{dead}); err != nil {
		t.Fatal(err)
	}
	if err := h.s.SyncConfigSubscriptions(ctx, []meta.Subscription{cfg}); err != nil {
		t.Fatal(err)
	}
	if got, _ = h.s.ParkedEvents(ctx, "acme", cfg.ID, 0, 10); len(got) != 1 || got[0].State != meta.ParkedWaiting || got[0].Attempts != 0 {
		t.Fatalf("a configured target's dead-lettered event after a start: %+v, want parked again", got)
	}
	if err := h.s.SyncConfigSubscriptions(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ = h.s.ParkedEvents(ctx, "acme", cfg.ID, 0, 10); len(got) != 0 {
		t.Fatalf("a removed target's parked events: %+v", got)
	}
}

// testSubscriptionsChangedCursor: every change of the subscriptions
// moves the cursor meta.SubscriptionsChanged, a round's own progress
// and a retry or MarkLagging that changes nothing do not (a dispatcher
// reads the table again only when it moved, ADR 0278).
func testSubscriptionsChangedCursor(t *testing.T, h *harness) {
	ctx := h.ctx()
	sub := meta.Subscription{ID: "s1", Tenant: "ta", URL: "http://127.0.0.1/", Secret: []byte("whsec_x"), Enabled: true,
		Source: meta.SourceAPI, CreatedAt: h.now(), Cursor: h.now().UnixNano(), State: meta.SubscriptionActive}
	last, err := h.s.Cursor(ctx, meta.SubscriptionsChanged)
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, moves bool, f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		v, err := h.s.Cursor(ctx, meta.SubscriptionsChanged)
		if err != nil {
			t.Fatal(err)
		}
		if (v != last) != moves {
			t.Errorf("%s: the cursor went from %q to %q; want moved %v", what, last, v, moves)
		}
		last = v
	}
	step("create", true, func() error { return h.s.CreateSubscription(ctx, sub, 0) })
	step("a round's progress", false, func() error {
		return h.s.AdvanceSubscription(ctx, "ta", "s1", meta.SubscriptionProgress{Cursor: sub.Cursor + 1, State: meta.SubscriptionActive, Delivered: 1})
	})
	step("retry with nothing parked", false, func() error { _, err := h.s.RetryParked(ctx, "ta", "s1", h.now()); return err })
	step("mark lagging, nothing behind", false, func() error { _, err := h.s.MarkLagging(ctx, h.now().Add(-time.Hour)); return err })
	step("mark lagging, one behind", true, func() error { _, err := h.s.MarkLagging(ctx, h.now().Add(time.Hour)); return err })
	step("replay", true, func() error { return h.s.ReplaySubscription(ctx, "ta", "s1", sub.Cursor) })
	step("resume", true, func() error { return h.s.ResumeSubscription(ctx, "ta", "s1") })
	step("sync the configured ones", true, func() error { return h.s.SyncConfigSubscriptions(ctx, nil) })
	step("delete", true, func() error { return h.s.DeleteSubscription(ctx, "ta", "s1") })
}
