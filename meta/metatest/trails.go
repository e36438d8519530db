package metatest

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// Trails (ADR 0266): compaction folds a claim's events into its tombstone,
// and every listing returns the same events before and after, page by
// page, including a page that straddles the compaction.

// eventLister reads one listing page by page: after is the seq of the
// last event of the previous page.
type eventLister struct {
	name string
	page func(after int64, limit int) ([]meta.Event, error)
	// minLimit: a listing across namespaces, where two events of
	// different namespaces may share a seq (the fake clock logs them in
	// the same nanosecond), pages by seq and keeps a full page of one seq
	// whole (ADR 0263), so a page of 1 would skip the second.
	minLimit int
}

func (h *harness) listings(claims []string) []eventLister {
	ctx := h.ctx()
	far := h.now().Add(1000 * time.Hour).UnixNano()
	ls := []eventLister{
		{"namespace ns", func(after int64, limit int) ([]meta.Event, error) {
			return h.s.NamespaceEvents(ctx, "ns", time.Time{}, after, limit)
		}, 1},
		{"namespace other", func(after int64, limit int) ([]meta.Event, error) {
			return h.s.NamespaceEvents(ctx, "other", time.Time{}, after, limit)
		}, 1},
		{"all events", func(after int64, limit int) ([]meta.Event, error) {
			return h.s.Events(ctx, after, limit)
		}, 2},
		{"feed", func(after int64, limit int) ([]meta.Event, error) {
			fs, err := h.s.FeedEvents(ctx, "", after, far, limit, false)
			out := make([]meta.Event, len(fs))
			for i, f := range fs {
				out[i] = f.Event
				out[i].Tenant = ""
			}
			return out, err
		}, 2},
	}
	for _, id := range claims {
		ls = append(ls, eventLister{"claim " + id, func(after int64, limit int) ([]meta.Event, error) {
			return h.s.ClaimEvents(ctx, id, after, limit)
		}, 1})
	}
	return ls
}

// listAllEvents reads a listing to its end in pages of limit.
func listAllEvents(t *testing.T, l eventLister, after int64, limit int) []meta.Event {
	t.Helper()
	var out []meta.Event
	short := false
	for range 10000 {
		page, err := l.page(after, limit)
		if err != nil {
			t.Fatalf("%s after %d: %v", l.name, after, err)
		}
		if len(page) == 0 {
			return out
		}
		if len(page) > limit {
			t.Fatalf("%s: a page of %d events, limit %d", l.name, len(page), limit)
		}
		// A client stops at a short page (claimcheck events does): in one
		// namespace, only the last page may be short. Across namespaces a
		// page also ends short before a seq it would split.
		if short && l.minLimit == 1 {
			t.Fatalf("%s in pages of %d: a short page before the last", l.name, limit)
		}
		short = len(page) < limit
		out = append(out, page...)
		after = page[len(page)-1].Seq
	}
	t.Fatalf("%s: no end after 10000 pages", l.name)
	return nil
}

// sameEvents compares two listings in (seq, namespace) order: the order
// of events of different namespaces that share a seq is not defined.
func sameEvents(t *testing.T, what string, got, want []meta.Event) {
	t.Helper()
	bySeq := func(a, b meta.Event) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), strings.Compare(a.Namespace, b.Namespace))
	}
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortStableFunc(got, bySeq)
	slices.SortStableFunc(want, bySeq)
	if reflect.DeepEqual(got, want) {
		return
	}
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = fmt.Sprintf("%+v", got[i])
		}
		if i < len(want) {
			w = fmt.Sprintf("%+v", want[i])
		}
		if g != w {
			t.Errorf("%s, event %d:\n got %s\nwant %s", what, i, g, w)
		}
	}
	t.Fatalf("%s: %d events, want %d (above)", what, len(got), len(want))
}

// testCompactTrails: claims of two namespaces live lives of seconds to
// weeks (trails of many span classes, spanning each other), and the
// listings of each claim, each namespace, all events and the feed give
// the same events, in pages of 1 to 100, before the compaction, after
// it, and across it; a trail is served no further back than the events
// retention, and goes with its tombstone.
func testCompactTrails(t *testing.T, h *harness) {
	ctx := claimcheck.WithActor(h.ctx(), "key_trail")
	var ids []string
	put := func(ns string, consumers int) meta.CommitResult {
		r := h.put(put{NS: ns, Consumers: consumers, Grace: time.Minute, MaxAge: 30 * 24 * time.Hour,
			Labels: map[string]string{"team": ns}})
		ids = append(ids, r.Claim.ID)
		return r
	}
	long := put("ns", 0) // lives two weeks
	h.clock.Advance(time.Hour)
	day := put("ns", 2) // a day, released by both consumers
	other := put("other", 0)
	h.read(long.Claim.ID)
	h.clock.Advance(3 * time.Second)
	short := put("ns", 0) // a second
	h.clock.Advance(time.Second)
	h.read(short.Claim.ID)
	h.finish(short.Claim.ID, meta.ReasonDeleted)
	if err := h.s.AppendEvents(ctx, []meta.Event{{At: h.now(), Kind: meta.EventKeyCreated, Tenant: "acme", Actor: "admin"}}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour)
	h.release(day.Claim.ID, "a")
	h.read(other.Claim.ID)
	h.clock.Advance(23 * time.Hour)
	if _, err := h.s.Release(ctx, day.Claim.ID, "b", h.now()); err != nil {
		t.Fatal(err)
	}
	h.finish(day.Claim.ID, meta.ReasonReleased)
	for i := range 5 { // many short claims, each spanned by the long one
		c := put([]string{"ns", "other"}[i%2], 0)
		h.clock.Advance(time.Duration(i+1) * time.Minute)
		h.read(c.Claim.ID)
		h.finish(c.Claim.ID, meta.ReasonExpired)
	}
	h.clock.Advance(13 * 24 * time.Hour)
	h.read(long.Claim.ID)
	h.finish(long.Claim.ID, meta.ReasonExpired)
	h.finish(other.Claim.ID, meta.ReasonDeleted)
	h.clock.Advance(time.Hour)
	live := put("ns", 0) // stays live: its events stay rows
	h.clock.Advance(2 * time.Hour)

	ls := h.listings(ids)
	before := make([][]meta.Event, len(ls))
	for i, l := range ls {
		before[i] = listAllEvents(t, l, 0, 1000)
		for _, limit := range []int{max(1, l.minLimit), 3} {
			sameEvents(t, fmt.Sprintf("%s in pages of %d", l.name, limit), listAllEvents(t, l, 0, limit), before[i])
		}
	}
	if len(before[0]) < 15 {
		t.Fatalf("namespace ns has %d events before compaction, want a claim's life each", len(before[0]))
	}
	// A page read before the compaction, continued after it.
	straddle := make([][]meta.Event, len(ls))
	for i, l := range ls {
		page, err := l.page(0, 2)
		if err != nil {
			t.Fatal(err)
		}
		straddle[i] = page
	}

	n, err := h.s.CompactHistory(ctx, h.now().Add(-time.Hour), 100)
	if err != nil || n != len(ids)-1 {
		t.Fatalf("CompactHistory = %d, %v; want the %d finished claims", n, err, len(ids)-1)
	}
	h.forget(ids...)
	h.track(live.Claim.ID, live.Blob.ID)
	for i, l := range ls {
		for _, limit := range []int{max(1, l.minLimit), 2, 3, 100} {
			sameEvents(t, fmt.Sprintf("%s in pages of %d after compaction", l.name, limit), listAllEvents(t, l, 0, limit), before[i])
		}
		if len(straddle[i]) > 0 {
			rest := listAllEvents(t, l, straddle[i][len(straddle[i])-1].Seq, 2)
			sameEvents(t, l.name+" paged across the compaction", append(straddle[i], rest...), before[i])
		}
	}
	// The namespace listing from a time on.
	since := h.now().Add(-14 * 24 * time.Hour)
	var want []meta.Event
	for _, e := range before[0] {
		if !e.At.Before(since) {
			want = append(want, e)
		}
	}
	got := listAllEvents(t, eventLister{"namespace ns since", func(after int64, limit int) ([]meta.Event, error) {
		return h.s.NamespaceEvents(ctx, "ns", since, after, limit)
	}, 1}, 0, 2)
	sameEvents(t, "namespace ns since a time", got, want)

	// Events retention: what it pruned is not served from a trail.
	cut := since.Add(time.Hour)
	if _, err := h.s.PruneEvents(ctx, cut, 10000); err != nil {
		t.Fatal(err)
	}
	for i, l := range ls[4:] {
		var want []meta.Event
		for _, e := range before[4+i] {
			if !e.At.Before(cut) {
				want = append(want, e)
			}
		}
		sameEvents(t, l.name+" after the events before "+cut.String()+" were pruned", listAllEvents(t, l, 0, 2), want)
	}
	// History retention takes the tombstones, and their trails with them.
	h.pruneHistory(h.now().Add(48*time.Hour), 1000)
	for _, l := range ls[4 : len(ls)-1] { // the live claim is last
		if evs := listAllEvents(t, l, 0, 100); len(evs) != 0 {
			t.Errorf("%s after its tombstone was pruned: %d events, want none", l.name, len(evs))
		}
	}
}
