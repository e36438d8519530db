package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
)

// refusingReceiver answers 500 to every event of the claims it refuses
// and 204 to the others, and records what it took, per claim in arrival
// order.
type refusingReceiver struct {
	url     string
	mu      sync.Mutex
	refuse  map[string]bool
	got     map[string][]string // claim: kinds taken
	seqs    map[string][]string // claim: event ids taken
	refused int
}

func newRefusingReceiver(t *testing.T) *refusingReceiver {
	r := &refusingReceiver{refuse: map[string]bool{}, got: map[string][]string{}, seqs: map[string][]string{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hook"
	return r
}

// ServeHTTP takes a structured or a batched request, refusing the whole
// of one that carries a refused event.
func (r *refusingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var ces []dispatch.CloudEvent
	if req.Header.Get("Content-Type") == "application/cloudevents-batch+json" {
		if err := json.Unmarshal(body, &ces); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
	} else {
		ces = make([]dispatch.CloudEvent, 1)
		if err := json.Unmarshal(body, &ces[0]); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ce := range ces {
		if r.refuse[ce.Subject] || r.refuse[ce.Subject+"/"+ce.Data.Kind] {
			r.refused++
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
	}
	for _, ce := range ces {
		r.got[ce.Subject] = append(r.got[ce.Subject], ce.Data.Kind)
		r.seqs[ce.Subject] = append(r.seqs[ce.Subject], ce.ID)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *refusingReceiver) setRefused(claim string, refused bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse[claim] = refused
}

// until polls cond until it holds, moving the fake clock on (past
// backoffs) between looks; it fails the test after a deadline.
func until(t *testing.T, e *env, what string, step time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		e.clock.Advance(step)
		time.Sleep(5 * time.Millisecond)
	}
}

func attempts(t *testing.T, e *env, id string) []claimcheck.SubscriptionAttempt {
	t.Helper()
	page, err := e.store.SubscriptionAttempts(context.Background(), claimcheck.DefaultTenant, id, "", claimcheck.MaxListLimit)
	if err != nil {
		t.Fatal(err)
	}
	return page.Attempts
}

// TestOneRefusedClaimDoesNotStallTheOthers: a receiver that refuses one
// claim's events only gets every other claim's events, and the cursor
// passes them, while the refused claim's events wait parked in order;
// once the receiver takes them they arrive in order (ADR 0277). Before
// parking, the cursor stopped at the refused event and no other claim's
// event was counted delivered.
func TestOneRefusedClaimDoesNotStallTheOthers(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testOneRefusedClaim(t, setupOn(t, backend, func(c *engine.Config) { c.Subscriptions.BackoffMax = 2 * time.Second }))
		})
	}
}

func testOneRefusedClaim(t *testing.T, e *env) {
	r := newRefusingReceiver(t)
	sub, err := e.store.CreateSubscription(context.Background(), claimcheck.DefaultTenant,
		claimcheck.SubscriptionSpec{URL: r.url, EventFilter: claimcheck.EventFilter{Types: []string{"created", "deleted"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Millisecond)
	ctx := context.Background()
	bad := e.put(t, "orders", claimcheck.PutOptions{})
	r.setRefused(bad.ID, true)
	if err := e.store.Delete(ctx, bad); err != nil {
		t.Fatal(err)
	}
	var others []claimcheck.Ref
	for range 300 {
		others = append(others, e.put(t, "orders", claimcheck.PutOptions{}))
	}
	until(t, e, "every other claim's created event", 50*time.Millisecond, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, o := range others {
			if len(r.got[o.ID]) == 0 {
				return false
			}
		}
		return true
	})
	r.mu.Lock()
	if len(r.got[bad.ID]) != 0 || r.refused == 0 {
		t.Errorf("the refused claim: took %v, refused %d times", r.got[bad.ID], r.refused)
	}
	r.mu.Unlock()
	until(t, e, "the cursor past the other claims", 50*time.Millisecond, func() bool {
		subs, err := e.store.Subscriptions(ctx, claimcheck.DefaultTenant)
		return err == nil && len(subs) == 1 && subs[0].Delivered == 300
	})
	parked := attempts(t, e, sub.ID)
	var kinds []string
	for _, a := range parked {
		if a.Event.ClaimID != bad.ID || a.State != "parked" {
			t.Errorf("parked: %+v, want only %s's events, parked", a, bad.ID)
		}
		kinds = append(kinds, a.Event.Kind)
	}
	if !slices.Equal(kinds, []string{"created", "deleted"}) || parked[0].Attempts == 0 || parked[0].LastError == "" || parked[1].Attempts != 0 {
		t.Fatalf("parked: %+v, want created (tried, failing) then deleted (waiting behind it)", parked)
	}

	r.setRefused(bad.ID, false)
	until(t, e, "the parked events", 500*time.Millisecond, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got[bad.ID]) >= 2
	})
	r.mu.Lock()
	got := slices.Clone(r.got[bad.ID])
	r.mu.Unlock()
	if !slices.Equal(got, []string{"created", "deleted"}) {
		t.Errorf("the parked claim's events arrived as %v, want created then deleted, once each", got)
	}
	until(t, e, "no parked events left", 50*time.Millisecond, func() bool { return len(attempts(t, e, sub.ID)) == 0 })
}

// TestDeadLetterReleasesTheLane: an event that fails max_attempts times
// is dead-lettered, alone: its claim's later event goes on, and the
// subscription stays active. Over HTTP, the dead-lettered event is
// listed, retried (delivered then), and a replay delivers the events
// after a time again; a configured target's are the operator's.
func TestDeadLetterReleasesTheLane(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *engine.Config) {
		c.Subscriptions.MaxAttempts = 2
		c.Subscriptions.BackoffMax = 2 * time.Second
	})
	srv := httptest.NewServer(server.New(server.Config{Claims: e.store, Ready: e.store.Ready}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	r := newRefusingReceiver(t)
	ctx := context.Background()
	sub, err := c.CreateSubscription(ctx, claimcheck.SubscriptionSpec{URL: r.url,
		EventFilter: claimcheck.EventFilter{Types: []string{"created", "deleted"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Millisecond)
	bad := e.put(t, "orders", claimcheck.PutOptions{})
	r.setRefused(bad.ID+"/created", true)
	if err := e.store.Delete(ctx, bad); err != nil {
		t.Fatal(err)
	}
	other := e.put(t, "orders", claimcheck.PutOptions{})
	until(t, e, "the refused event dead-lettered and its claim's next event delivered", 500*time.Millisecond, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got[bad.ID]) == 1 && len(r.got[other.ID]) == 1
	})
	// The receiver has the deleted event before the dispatcher hears its
	// answer and drops the event's parked row: wait for that row to go
	// rather than read the attempts in between.
	var page claimcheck.SubscriptionAttemptPage
	until(t, e, "the delivered event's attempt row gone", 50*time.Millisecond, func() bool {
		page, err = c.SubscriptionAttempts(ctx, sub.ID, "", 0)
		return err == nil && len(page.Attempts) <= 1
	})
	if len(page.Attempts) != 1 || page.Attempts[0].State != "dead_lettered" || page.Attempts[0].Attempts != 2 ||
		page.Attempts[0].Event.Kind != "created" || page.Attempts[0].Event.ClaimID != bad.ID || page.Attempts[0].LastError == "" {
		t.Fatalf("attempts: %+v, want %s's created dead-lettered after 2 attempts", page.Attempts, bad.ID)
	}
	r.mu.Lock()
	if got := r.got[bad.ID]; !slices.Equal(got, []string{"deleted"}) {
		t.Errorf("%s: got %v, want its deleted event past the dead-lettered one", bad.ID, got)
	}
	r.mu.Unlock()
	if subs, err := c.Subscriptions(ctx); err != nil || len(subs) != 1 || subs[0].State != "active" {
		t.Fatalf("subscription: %+v, %v; want it active (one event failed, not every delivery)", subs, err)
	}

	r.setRefused(bad.ID+"/created", false)
	if n, err := c.RetrySubscription(ctx, sub.ID); err != nil || n.Retried != 1 {
		t.Fatalf("retry: %+v, %v; want 1", n, err)
	}
	until(t, e, "the retried event", 50*time.Millisecond, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got[bad.ID]) == 2
	})
	until(t, e, "no attempts left", 50*time.Millisecond, func() bool {
		page, err := c.SubscriptionAttempts(ctx, sub.ID, "", 0)
		return err == nil && len(page.Attempts) == 0
	})

	replay, err := c.ReplaySubscription(ctx, sub.ID, t0.Format(time.RFC3339))
	if err != nil || replay.Cursor != t0.UnixNano()-1 {
		t.Fatalf("replay: %+v, %v", replay, err)
	}
	until(t, e, "the replayed events", 50*time.Millisecond, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got[other.ID]) == 2 && len(r.got[bad.ID]) == 4
	})
	if _, err := c.ReplaySubscription(ctx, sub.ID, "yesterday"); !errors.Is(err, claimcheck.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "since") {
		t.Errorf("replay since yesterday: %v, want invalid argument naming since", err)
	}
	for _, call := range []func() error{
		func() error { _, err := c.RetrySubscription(ctx, "config:ops"); return err },
		func() error { _, err := c.ReplaySubscription(ctx, "config:ops", "0"); return err },
	} {
		if err := call(); !errors.Is(err, claimcheck.ErrPermissionDenied) {
			t.Errorf("retry or replay of a configured target: %v, want permission denied", err)
		}
	}
	if _, err := c.RetrySubscription(ctx, "nosuch"); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("retry of no subscription: %v, want not found", err)
	}
}

// TestRefusedBatchRetriesClaimByClaim: in the batched mode, a request of
// several claims that the receiver refuses for one claim's event is sent
// again one claim a request: the others are delivered and only the
// refused claim is parked. Before, the whole batch was taken for the
// receiver failing: the cursor stayed and the subscription retried the
// same batch, delivering nothing, until it was dead-lettered.
func TestRefusedBatchRetriesClaimByClaim(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *engine.Config) {
		c.Subscriptions.MaxAttempts = 3
		c.Subscriptions.Concurrency = 1 // one lane: every claim in one request
		c.Subscriptions.EventsPerRequest = 100
	})
	r := newRefusingReceiver(t)
	ctx := context.Background()
	sub, err := e.store.CreateSubscription(ctx, claimcheck.DefaultTenant, claimcheck.SubscriptionSpec{URL: r.url,
		EventFilter: claimcheck.EventFilter{Types: []string{"created"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Millisecond)
	bad := e.put(t, "orders", claimcheck.PutOptions{})
	r.setRefused(bad.ID, true)
	var others []claimcheck.Ref
	for range 5 {
		others = append(others, e.put(t, "orders", claimcheck.PutOptions{}))
	}
	until(t, e, "every other claim's event", 500*time.Millisecond, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, o := range others {
			if len(r.got[o.ID]) != 1 {
				return false
			}
		}
		return r.refused > 0
	})
	page, err := e.store.SubscriptionAttempts(ctx, claimcheck.DefaultTenant, sub.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range page.Attempts {
		if a.Event.ClaimID != bad.ID {
			t.Errorf("claim %s is %s after %d attempts; only %s was refused", a.Event.ClaimID, a.State, a.Attempts, bad.ID)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got[bad.ID]) != 0 {
		t.Errorf("the refused claim's event was taken: %v", r.got[bad.ID])
	}
}
