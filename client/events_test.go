package client_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
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

// TestEventsOverHTTPAcrossCompaction: a claim's and a namespace's events
// over the API are the same before and after the sweeper compacts the
// finished claims (their events then live in their tombstones' trails,
// ADR 0266), in pages of 2, and a listing paged across the compaction
// misses nothing and repeats nothing.
func TestEventsOverHTTPAcrossCompaction(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	var refs []claimcheck.Ref
	for i := range 4 {
		ref := b.put(t, "raw", []byte("audited"), claimcheck.PutOptions{})
		refs = append(refs, ref)
		b.clock.Advance(time.Duration(i+1) * time.Second)
		if _, err := b.redeem(ref); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := b.client.Release(ctx, ref, "billing"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ref := range refs[:3] {
		b.clock.Advance(time.Minute)
		if err := b.client.Delete(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	all := func(list func(after int64) ([]claimcheck.Event, error)) []claimcheck.Event {
		t.Helper()
		var out []claimcheck.Event
		after := int64(0)
		for {
			page, err := list(after)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				return out
			}
			out = append(out, page...)
			after = page[len(page)-1].Seq
		}
	}
	listings := map[string]func(after int64) ([]claimcheck.Event, error){
		"namespace raw": func(after int64) ([]claimcheck.Event, error) {
			return b.client.NamespaceEvents(ctx, "raw", claimcheck.EventQuery{After: after, Limit: 2})
		},
	}
	for i, ref := range refs {
		listings["claim "+string(rune('0'+i))] = func(after int64) ([]claimcheck.Event, error) {
			return b.client.ClaimEvents(ctx, ref, claimcheck.EventQuery{After: after, Limit: 2})
		}
	}
	before := map[string][]claimcheck.Event{}
	firstPage := map[string][]claimcheck.Event{}
	for name, list := range listings {
		before[name] = all(list)
		page, err := list(0)
		if err != nil {
			t.Fatal(err)
		}
		firstPage[name] = page
	}
	if len(before["namespace raw"]) < 15 {
		t.Fatalf("namespace events before compaction: %d", len(before["namespace raw"]))
	}

	b.clock.Advance(2 * time.Hour)
	if n, err := b.store.Sweeper().CompactHistory(ctx, 0); err != nil || n != 3 {
		t.Fatalf("CompactHistory = %d, %v; want the 3 finished claims", n, err)
	}
	for name, list := range listings {
		if got := all(list); !reflect.DeepEqual(got, before[name]) {
			t.Errorf("%s after compaction:\n got %+v\nwant %+v", name, got, before[name])
		}
		page := firstPage[name]
		rest := all(func(after int64) ([]claimcheck.Event, error) {
			if after == 0 {
				after = page[len(page)-1].Seq
			}
			return list(after)
		})
		if got := append(slices.Clone(page), rest...); !reflect.DeepEqual(got, before[name]) {
			t.Errorf("%s paged across the compaction:\n got %+v\nwant %+v", name, got, before[name])
		}
	}
}
