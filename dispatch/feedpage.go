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
}

// feedPages is a tick's pages by tenant.
type feedPages map[string]*feedPage

// readPages reads one page per tenant of the rounds, from the lowest of
// their cursors: with N idle subscriptions of a tenant, one read instead
// of N. A tenant whose read fails has no page: its rounds read their own.
func (d *Dispatcher) readPages(ctx context.Context, rounds []dueRound) feedPages {
	at := d.clock.Now()
	upTo := at.Add(-d.cfg.Settle).UnixNano()
	pages := feedPages{}
	for _, r := range rounds {
		s := r.sub
		pg := pages[s.Tenant]
		if pg == nil {
			pg = &feedPage{at: at, after: s.Cursor, upTo: upTo}
			pages[s.Tenant] = pg
		}
		pg.after = min(pg.after, s.Cursor)
		pg.labels = pg.labels || len(s.Labels) > 0
	}
	limit := pageBatches * d.cfg.Batch
	for tenant, pg := range pages {
		pg.through = pg.upTo
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
	}
	return pages
}

// eventsFor returns the events a read of s's own would return (up to
// limit of its tenant after its cursor, with labels only when its filter
// names some), and whether the page holds them all; false: s reads its
// own.
func (pg *feedPage) eventsFor(s meta.Subscription, limit int) ([]meta.FeedEvent, bool) {
	if pg == nil || s.Cursor < pg.after || (len(s.Labels) > 0 && !pg.labels) {
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
