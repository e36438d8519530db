package client_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server"
)

// smallPages is a store whose subscription pages hold 3 at most, so
// that a listing of a few takes several pages.
type smallPages struct{ server.Store }

func (s smallPages) SubscriptionPage(ctx context.Context, tenant, cursor string, limit int) (claimcheck.SubscriptionPage, error) {
	return s.Store.SubscriptionPage(ctx, tenant, cursor, 3)
}

// TestSubscriptionsFollowPages: Subscriptions reads every page of GET
// /v1/subscriptions (ADR 0270), so `claimcheck subscriptions ls` lists
// them all; SubscriptionPage reads one.
func TestSubscriptionsFollowPages(t *testing.T) {
	b := setup(t, func(s server.Store) server.Store { return smallPages{s} })
	ctx := context.Background()
	for i := range 8 {
		if _, err := b.client.CreateSubscription(ctx, claimcheck.SubscriptionSpec{ID: fmt.Sprint("s", i), URL: "https://hooks.example.com/"}); err != nil {
			t.Fatal(err)
		}
	}
	subs, err := b.client.Subscriptions(ctx)
	if err != nil || len(subs) != 8 || subs[0].ID != "s0" || subs[7].ID != "s7" {
		t.Fatalf("Subscriptions: %d, %v; want s0..s7", len(subs), err)
	}
	page, err := b.client.SubscriptionPage(ctx, "s2", 2)
	if err != nil || len(page.Subscriptions) != 3 || page.Subscriptions[0].ID != "s3" || page.Next != "s5" {
		t.Fatalf("the page after s2: %+v, %v", page, err)
	}
}

// TestNamespacesFollowPages: Namespaces reads every page of GET
// /v1/namespaces (ADR 0270); the server here answers one per page.
func TestNamespacesFollowPages(t *testing.T) {
	onePerPage := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/namespaces" {
				q := r.URL.Query()
				q.Set("limit", "1")
				r.URL.RawQuery = q.Encode()
			}
			h.ServeHTTP(w, r)
		})
	}
	b := setupWith(t, onePerPage)
	list, err := b.client.Namespaces(context.Background())
	if err != nil || len(list) != len(testNamespaces) {
		t.Fatalf("Namespaces: %d, %v; want the %d configured", len(list), err, len(testNamespaces))
	}
	for i := 1; i < len(list); i++ {
		if list[i-1].Name >= list[i].Name {
			t.Fatalf("not in order of name: %s then %s", list[i-1].Name, list[i].Name)
		}
	}
}
