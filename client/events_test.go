package client_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// TestEventsOverHTTP: the audit trail of a claim and of a namespace
// through the API, with paging, the namespace check and bad parameters.
func TestEventsOverHTTP(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	ref := b.put(t, "raw", []byte("audited"), claimcheck.PutOptions{})
	if _, err := b.redeem(ref); err != nil {
		t.Fatal(err)
	}
	if err := b.client.Release(ctx, ref, "billing"); err != nil {
		t.Fatal(err)
	}
	if err := b.client.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	es, err := b.client.ClaimEvents(ctx, ref, claimcheck.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range es {
		kinds = append(kinds, e.Kind)
	}
	if !slices.Equal(kinds, []string{"created", "redeemed", "first_redeemed", "released", "all_released", "deleted"}) ||
		es[3].Detail != "billing" || es[5].Reason != "deleted" || es[0].ClaimID != ref.ID {
		t.Fatalf("events %+v", es)
	}
	page, err := b.client.ClaimEvents(ctx, ref, claimcheck.EventQuery{After: es[2].Seq, Limit: 1})
	if err != nil || len(page) != 1 || page[0].Seq != es[3].Seq {
		t.Errorf("page after the third event: %+v, %v", page, err)
	}
	if _, err := b.client.ClaimEvents(ctx, claimcheck.Ref{ID: ref.ID, Namespace: "short"}, claimcheck.EventQuery{}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("events with the wrong namespace: %v, want not found", err)
	}
	ns, err := b.client.NamespaceEvents(ctx, "raw", claimcheck.EventQuery{Since: t0.Add(-time.Hour)})
	if err != nil || len(ns) != 6 {
		t.Errorf("namespace events: %+v, %v", ns, err)
	}
	for _, q := range []string{"?limit=0", "?limit=x", "?after=-1", "?since=yesterday", "?bogus=1", "?limit=1&limit=2"} {
		resp, err := http.Get(b.http.URL + "/v1/claims/" + ref.ID + "/events" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("events%s: status %d, want 400", q, resp.StatusCode)
		}
	}
}
