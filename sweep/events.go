package sweep

import (
	"context"
	"fmt"
	"time"
)

// Events retention: the audit trail grows with every put, read, release
// and finish, so the sweeper deletes events older than the retention in
// pages, oldest first. Pruning is not due work of a claim (no deadline of
// a stored byte depends on it), so it runs at most once per
// eventPruneEvery, under a lease so one replica does it, and each call is
// bounded (eventPrunePages pages), whatever the traffic: waiting for idle
// would let the log grow without bound on a busy store.
const (
	eventPruneEvery = 10 * time.Minute
	eventPrunePage  = 1000
	eventPrunePages = 100
	// EventsLease is the lease held while pruning events.
	EventsLease = "events-prune"
)

// PruneEvents deletes events older than now - cfg.EventRetention, up to
// maxPages pages of eventPrunePage rows (maxPages <= 0: until none is
// left), and returns how many it deleted. With a zero or negative
// retention it does nothing.
func (s *Sweeper) PruneEvents(ctx context.Context, maxPages int) (int, error) {
	if s.cfg.EventRetention <= 0 {
		return 0, nil
	}
	before := s.clock.Now().Add(-s.cfg.EventRetention)
	total := 0
	for page := 0; maxPages <= 0 || page < maxPages; page++ {
		n, err := s.meta.PruneEvents(ctx, before, eventPrunePage)
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep: prune events: %w", err)
		}
		s.metrics.EventsPruned.Add(float64(n))
		if n < eventPrunePage {
			break
		}
	}
	return total, nil
}

// tickEvents prunes events from the background loop, at most once per
// eventPruneEvery.
func (s *Sweeper) tickEvents(ctx context.Context) {
	if s.cfg.EventRetention <= 0 {
		return
	}
	now := s.clock.Now()
	if last := s.lastPrune.Load(); last != 0 && now.Sub(time.Unix(0, last)) < eventPruneEvery {
		return
	}
	s.lastPrune.Store(now.UnixNano())
	ok, err := s.meta.TryLease(ctx, EventsLease, s.holder, now, eventPruneEvery)
	if err != nil || !ok {
		return
	}
	if _, err := s.PruneEvents(ctx, eventPrunePages); err != nil && ctx.Err() == nil {
		s.log.Warn("sweep: pruning events failed; retrying later", "err", err)
	}
}
