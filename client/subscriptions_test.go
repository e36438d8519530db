package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// TestSubscriptionModeOverHTTP: a subscription's events_per_request goes
// to the server at create and comes back in the list; past the bound the
// server's refusal names the field.
func TestSubscriptionModeOverHTTP(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	sub, err := b.client.CreateSubscription(ctx, claimcheck.SubscriptionSpec{ID: "bulk", URL: "https://hooks.example.com/bulk", EventsPerRequest: 50})
	if err != nil || sub.EventsPerRequest != 50 {
		t.Fatalf("create: %+v, %v", sub, err)
	}
	subs, err := b.client.Subscriptions(ctx)
	if err != nil || len(subs) != 1 || subs[0].EventsPerRequest != 50 {
		t.Fatalf("list: %+v, %v", subs, err)
	}
	_, err = b.client.CreateSubscription(ctx, claimcheck.SubscriptionSpec{URL: "https://hooks.example.com/bulk", EventsPerRequest: 5000})
	if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "events_per_request: 5000") {
		t.Errorf("events_per_request 5000: %v, want invalid argument naming the field", err)
	}
}

// TestFollowEventsAcrossShutdown: a stream that a server ends with its
// shutdown message (no id, a retry hint) passes no event for it, and is
// opened again with the last event's id as Last-Event-ID; seqs arrive as
// JSON strings (ADR 0273) or, from older servers, as numbers.
func TestFollowEventsAcrossShutdown(t *testing.T) {
	const first, second = "1795910484197391993", "1795910484197391994"
	var mu sync.Mutex
	var lastIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		n := len(lastIDs)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			_, _ = fmt.Fprintf(w, "retry: 1000\n\nid: %s\nevent: created\ndata: {\"seq\":\"%s\",\"at\":\"2026-11-29T00:00:00Z\",\"kind\":\"created\"}\n\n", first, first)
			_, _ = fmt.Fprint(w, "retry: 10\nevent: shutdown\ndata: {\"reason\":\"server shutting down\"}\n\n")
			return
		}
		_, _ = fmt.Fprintf(w, "id: %s\nevent: created\ndata: {\"seq\":%s,\"at\":\"2026-11-29T00:00:00Z\",\"kind\":\"created\"}\n\n", second, second)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var got []claimcheck.Event
	stop := errors.New("enough")
	err = c.FollowEvents(context.Background(), claimcheck.EventFilter{}, 0, func(e claimcheck.Event) error {
		got = append(got, e)
		if len(got) == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("FollowEvents: %v", err)
	}
	if strconv.FormatInt(got[0].Seq, 10) != first || got[0].Kind != "created" || strconv.FormatInt(got[1].Seq, 10) != second {
		t.Errorf("events %+v, want %s then %s (no event for the shutdown message)", got, first, second)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lastIDs) != 2 || lastIDs[0] != "" || lastIDs[1] != first {
		t.Errorf("Last-Event-ID of each connection: %q, want none, then %s", lastIDs, first)
	}
}
