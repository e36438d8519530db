package dispatch

import (
	"context"
	"sort"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// pageBatches bounds a tenant's page in batches: it serves subscriptions
// whose cursors lie up to a few batches apart, and its read stays bounded.
const pageBatches = 4

// feedPage is one read of a tenant's feed shared by the rounds a tick
// starts (ADR 0278): every event of the tenant with after < seq <=
// through, settled by upTo. A subscription whose cursor is within it
// takes its events from the page; one behind it, or needing more than
// the page holds, reads its own as before.
type feedPage struct {
	at          time.Time // when it was read; upTo is at minus the settle time
	after, upTo int64
	through     int64
	labels      bool // the events carry their claims' labels
	events      []meta.FeedEvent
	quiet       quietSpan // of the tenant, as known before the read
}

// quietSpan is a span of a tenant's feed known to hold none of its
// events: after < seq <= through (ADR 0278). A page read that found none
// makes one, from where it began to its upTo; spans that meet join. A
// read that found some says nothing of the span after its last event:
// the feed may end a page before its limit (it never ends one between
// two events of a seq, and merges the compacted trails), so only an
// empty answer is known to be the whole of its span.
// A subscription whose cursor lies in the span has seen everything of
// its tenant up to through, so the next page begins there and not at the
// cursor: an idle tenant's read covers only what was written since the
// last tick, not everything since its last event.
type quietSpan struct{ after, through int64 }

// from is where a page read for a subscription at cursor may begin.
func (q quietSpan) from(cursor int64) int64 {
	if cursor >= q.after && cursor < q.through {
		return q.through
	}
	return cursor
}

// joined is q with the span (after, through] known quiet too.
func (q quietSpan) joined(after, through int64) quietSpan {
	if after <= q.through && after >= q.after {
		return quietSpan{after: q.after, through: max(through, q.through)}
	}
	return quietSpan{after: after, through: through}
}

// feedPages is a tick's pages by tenant.
type feedPages map[string]*feedPage

// readPages reads one page per tenant of the rounds, from the lowest of
// their cursors (or the ends of their tenants' quiet spans): with N idle
// subscriptions of a tenant, one read instead of N. With several
// tenants it first reads every tenant's events at once, which, when it
// finds none (the idle case: nothing was written since the last tick),
// answers them all in one read; otherwise each tenant is read on its
// own. A tenant whose read fails has no page: its rounds read their own.
func (d *Dispatcher) readPages(ctx context.Context, rounds []dueRound) feedPages {
	at := d.clock.Now()
	upTo := at.Add(-d.cfg.Settle).UnixNano()
	pages := feedPages{}
	for _, r := range rounds {
		s := r.sub
		pg := pages[s.Tenant]
		q := d.quiet[s.Tenant]
		if pg == nil {
			pg = &feedPage{at: at, after: q.from(s.Cursor), upTo: upTo, through: upTo, quiet: q}
			pages[s.Tenant] = pg
		}
		pg.after = min(pg.after, q.from(s.Cursor))
		pg.labels = pg.labels || len(s.Labels) > 0
	}
	limit := pageBatches * d.cfg.Batch
	if len(pages) > 1 && d.readEveryTenant(ctx, pages) {
		return pages
	}
	for tenant, pg := range pages {
		if pg.upTo <= pg.after {
			continue // nothing settled after any cursor: nothing to read
		}
		es, err := d.meta.FeedEvents(ctx, tenant, pg.after, pg.upTo, limit, pg.labels)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("dispatch: read events", "tenant", tenant, "err", err)
			}
			delete(pages, tenant)
			continue
		}
		pg.events = es
		if len(es) == limit {
			pg.through = es[len(es)-1].Seq // more may follow
		}
		d.quietThrough(tenant, pg)
	}
	return pages
}

// readEveryTenant looks for any tenant's event after the lowest of the
// pages' starts and reports whether there was none: then every page is
// complete and empty. false leaves the pages as they were.
func (d *Dispatcher) readEveryTenant(ctx context.Context, pages feedPages) bool {
	var after, upTo int64
	for _, pg := range pages {
		if upTo == 0 || pg.after < after {
			after = pg.after
		}
		upTo = pg.upTo
	}
	if upTo > after {
		// Whether there is any: one event is enough to say no.
		es, err := d.meta.FeedEvents(ctx, "", after, upTo, 1, false)
		if err != nil || len(es) > 0 {
			return false
		}
	}
	for tenant, pg := range pages {
		// Empty, it holds every label a filter could ask for.
		pg.after, pg.labels = after, true
		d.quietThrough(tenant, pg)
	}
	return true
}

// quietThrough records a page read of tenant's events that found none:
// its span is quiet.
func (d *Dispatcher) quietThrough(tenant string, pg *feedPage) {
	if len(pg.events) == 0 && pg.upTo > pg.after {
		d.quiet[tenant] = pg.quiet.joined(pg.after, pg.upTo)
	}
}

// eventsFor returns the events a read of s's own would return (up to
// limit of its tenant after its cursor, with labels only when its filter
// names some), and whether the page holds them all; false: s reads its
// own.
func (pg *feedPage) eventsFor(s *meta.Subscription, limit int) ([]meta.FeedEvent, bool) {
	if pg == nil || pg.quiet.from(s.Cursor) < pg.after || (len(s.Labels) > 0 && !pg.labels) {
		return nil, false
	}
	from := sort.Search(len(pg.events), func(i int) bool { return pg.events[i].Seq > s.Cursor })
	var es []meta.FeedEvent
	for _, e := range pg.events[from:] {
		if len(es) == limit {
			break
		}
		if len(s.Labels) == 0 {
			e.Labels = nil // as its own read: without the claims' labels
		}
		es = append(es, e)
	}
	// A full batch is what its read would return; fewer are all of it
	// only when the page reaches upTo.
	return es, len(es) == limit || pg.through == pg.upTo
}
