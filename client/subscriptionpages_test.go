package client_test

import (
	"context"
	"fmt"
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
