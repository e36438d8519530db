package sweep

import (
	"context"
	"fmt"
	"time"
)

// Retention: the audit trail grows with every put, read, release and
// finish, and the claims and blobs tables keep a row for every finished
// claim and collected blob (so a redeem of a finished claim answers gone
// with its reason). The sweeper deletes events older than the events
// retention, and finished claims and collected blobs older than the
// history retention (ADR 0077), in pages, oldest first. Pruning is not due
// work of a claim (no deadline of a stored byte depends on it), so it runs
// at most once per pruneEvery, under a lease so one replica does it, and
// each call is bounded (prunePages pages of each), whatever the traffic:
// waiting for idle would let the tables grow without bound on a busy
// store.
//
// Before retention, compaction (ADR 0263): a claim finished compactAfter
// ago becomes a tombstone that still answers gone with its reason, and its
// other rows and its collected blob's row go, so what history keeps for
// the rest of its retention is small. compactAfter leaves the full row
// for a while to what reads it right after the finish: a repeated release
// of a claim its releases finished is still accepted (the row knows who
// released it), and an upload's idempotency key still names its upload.
const (
	compactAfter = time.Hour
	pruneEvery   = 10 * time.Minute
	prunePage    = 1000
	prunePages   = 100
	// EventsLease is the lease held while pruning events and history.
	EventsLease = "events-prune"
)

// PruneEvents deletes events older than now - cfg.EventRetention, up to
// maxPages pages of prunePage rows (maxPages <= 0: until none is left),
// and returns how many it deleted. With a zero or negative retention it
// does nothing.
func (s *Sweeper) PruneEvents(ctx context.Context, maxPages int) (int, error) {
	if s.cfg.EventRetention <= 0 {
		return 0, nil
	}
	before := s.clock.Now().Add(-s.cfg.EventRetention)
	total := 0
	for page := 0; maxPages <= 0 || page < maxPages; page++ {
		n, err := s.meta.PruneEvents(ctx, before, prunePage)
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep: prune events: %w", err)
		}
		s.metrics.EventsPruned.Add(float64(n))
		if n < prunePage {
			break
		}
	}
	return total, nil
}

// CompactHistory turns claims finished more than compactAfter ago into
// tombstones, up to maxPages pages of prunePage claims (maxPages <= 0:
// until none is left), and returns how many it compacted. It runs
// whatever the retention: a tombstone answers gone as the row did.
func (s *Sweeper) CompactHistory(ctx context.Context, maxPages int) (int, error) {
	before := s.clock.Now().Add(-compactAfter)
	total := 0
	for page := 0; maxPages <= 0 || page < maxPages; page++ {
		n, err := s.meta.CompactHistory(ctx, before, prunePage)
		total += n
		s.metrics.HistoryPruned.WithLabelValues("compacted").Add(float64(n))
		if err != nil {
			return total, fmt.Errorf("sweep: compact history: %w", err)
		}
		if n < prunePage {
			break
		}
	}
	return total, nil
}

// PruneHistory deletes finished claims, their tombstones and collected
// blobs older than now - historyKept, up to maxPages pages of prunePage
// rows of each (maxPages <= 0: until none is left), and returns how many
// claims (rows and tombstones) and blobs it deleted. Tombstones kept in
// day partitions go a whole day at a time, and are not counted. With a
// zero or negative retention it does nothing.
func (s *Sweeper) PruneHistory(ctx context.Context, maxPages int) (claims, blobs int, err error) {
	kept := s.historyKept()
	if kept <= 0 {
		return 0, 0, nil
	}
	before := s.clock.Now().Add(-kept)
	for page := 0; maxPages <= 0 || page < maxPages; page++ {
		res, err := s.meta.PruneHistory(ctx, before, prunePage)
		claims += res.Claims + res.Tombstones
		blobs += res.Blobs
		s.metrics.HistoryPruned.WithLabelValues("claims").Add(float64(res.Claims))
		s.metrics.HistoryPruned.WithLabelValues("blobs").Add(float64(res.Blobs))
		s.metrics.HistoryPruned.WithLabelValues("claim_tombstones").Add(float64(res.Tombstones))
		s.metrics.HistoryPruned.WithLabelValues("claim_tombstone_days").Add(float64(res.TombstoneDays))
		if err != nil {
			return claims, blobs, fmt.Errorf("sweep: prune history: %w", err)
		}
		if res.Claims < prunePage && res.Blobs < prunePage && res.Tombstones < prunePage {
			break
		}
	}
	return claims, blobs, nil
}

// historyKept is how long finished claims are kept: the history
// retention, or the events retention when that is longer (zero or
// negative keeps events: then history is kept too). A compacted claim's events are in its
// tombstone's trail (ADR 0266), so the tombstone stays as long as its
// events must; a claim answers gone that much longer.
func (s *Sweeper) historyKept() time.Duration {
	h, e := s.cfg.HistoryRetention, s.cfg.EventRetention
	if h <= 0 || e <= 0 {
		return 0
	}
	return max(h, e)
}

// tickRetention compacts and prunes history and prunes events from the
// background loop, at most once per pruneEvery.
func (s *Sweeper) tickRetention(ctx context.Context) {
	now := s.clock.Now()
	if last := s.lastPrune.Load(); last != 0 && now.Sub(time.Unix(0, last)) < pruneEvery {
		return
	}
	s.lastPrune.Store(now.UnixNano())
	ok, err := s.pruneLease.Take(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("sweep: taking the pruning lease failed; retrying later", "err", err)
		}
		return
	}
	if !ok {
		return
	}
	ctx, span := s.tracer.Start(ctx, spanPrune)
	defer span.End()
	if _, err := s.CompactHistory(ctx, prunePages); err != nil && ctx.Err() == nil {
		s.log.Warn("sweep: compacting finished claims failed; retrying later", "err", err)
	}
	if _, err := s.PruneEvents(ctx, prunePages); err != nil && ctx.Err() == nil {
		s.log.Warn("sweep: pruning events failed; retrying later", "err", err)
	}
	if _, _, err := s.PruneHistory(ctx, prunePages); err != nil && ctx.Err() == nil {
		s.log.Warn("sweep: pruning finished claims and collected blobs failed; retrying later", "err", err)
	}
}
