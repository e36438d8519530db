package dispatch

import (
	"slices"
	"testing"

	"github.com/claimcheck/claimcheck/meta"
)

// seqsOf is the seqs of es.
func seqsOf(es []meta.FeedEvent) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// A page answers a subscription exactly as its own read would, and
// says when it cannot: a cursor before the page, a filter naming labels
// on a page without them, or a full page that holds less than a batch
// after the cursor (a laggard's or a leader's own read goes on past it).
func TestFeedPageAnswersAsOwnRead(t *testing.T) {
	page := func(through int64, labels bool, seqs ...int64) *feedPage {
		pg := &feedPage{after: 10, upTo: 100, through: through, labels: labels}
		for _, q := range seqs {
			pg.events = append(pg.events, meta.FeedEvent{Event: meta.Event{Seq: q, Tenant: "t"}, Labels: map[string]string{"team": "a"}})
		}
		return pg
	}
	sub := func(cursor int64, labels bool) meta.Subscription {
		s := meta.Subscription{Tenant: "t", Cursor: cursor}
		if labels {
			s.Labels = map[string]string{"team": "a"}
		}
		return s
	}
	for _, c := range []struct {
		name   string
		pg     *feedPage
		s      meta.Subscription
		batch  int
		want   []int64
		wantOK bool
	}{
		{"no page", nil, sub(10, false), 3, nil, false},
		{"complete page, after the cursor", page(100, false, 11, 20, 30), sub(15, false), 3, []int64{20, 30}, true},
		{"complete page, a batch", page(100, false, 11, 20, 30, 40), sub(10, false), 2, []int64{11, 20}, true},
		{"idle: nothing after the cursor", page(100, false), sub(10, false), 3, nil, true},
		{"cursor before the page", page(100, false, 11), sub(5, false), 3, nil, false},
		{"labels wanted, none read", page(100, false, 11), sub(10, true), 3, nil, false},
		{"full page, less than a batch left", page(40, false, 11, 20, 30, 40), sub(30, false), 3, []int64{40}, false},
		{"full page, a batch left", page(40, false, 11, 20, 30, 40), sub(10, false), 3, []int64{11, 20, 30}, true},
		{"cursor before the page, in a quiet span reaching it", quietPage(page(100, false, 11), quietSpan{2, 10}), sub(5, false), 3, []int64{11}, true},
		{"cursor before a quiet span", quietPage(page(100, false, 11), quietSpan{6, 10}), sub(5, false), 3, nil, false},
	} {
		got, ok := c.pg.eventsFor(&c.s, c.batch)
		if ok != c.wantOK || (ok && !slices.Equal(seqsOf(got), c.want)) {
			t.Errorf("%s: got %v, %v; want %v, %v", c.name, seqsOf(got), ok, c.want, c.wantOK)
		}
		for _, e := range got {
			if (e.Labels != nil) != (len(c.s.Labels) > 0) {
				t.Errorf("%s: event %d labels %v for a filter with labels %v", c.name, e.Seq, e.Labels, c.s.Labels)
			}
		}
	}
}

func quietPage(pg *feedPage, q quietSpan) *feedPage {
	pg.quiet = q
	return pg
}

// Quiet spans: a subscription at a cursor inside one reads from its end;
// spans that meet join, others replace.
func TestQuietSpans(t *testing.T) {
	q := quietSpan{after: 10, through: 50}
	for cursor, want := range map[int64]int64{5: 5, 10: 50, 30: 50, 50: 50, 60: 60} {
		if got := q.from(cursor); got != want {
			t.Errorf("from(%d) = %d, want %d", cursor, got, want)
		}
	}
	for _, c := range []struct {
		after, through int64
		want           quietSpan
	}{
		{50, 80, quietSpan{10, 80}}, // meets at the end
		{30, 80, quietSpan{10, 80}}, // overlaps
		{60, 80, quietSpan{60, 80}}, // an event between: a new span
		{5, 80, quietSpan{5, 80}},   // read from before it
	} {
		if got := q.joined(c.after, c.through); got != c.want {
			t.Errorf("joined(%d, %d) = %+v, want %+v", c.after, c.through, got, c.want)
		}
	}
}
