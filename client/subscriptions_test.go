package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
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
