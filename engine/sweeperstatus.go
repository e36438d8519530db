package engine

import (
	"context"
	"time"
)

// DueBacklogBound is the most due items DueBacklog counts: past it the
// figure says "at least this many", and the count stays a bounded read of
// the due indexes however large the backlog is.
const DueBacklogBound = 10_000

// OldestDue is the earliest due time over claims and blobs (the zero
// time when nothing is ever due): the figure the sweeper's lag is
// measured from (claimcheck_sweeper_lag_seconds). It is one read of the
// due index, not a count, so the console may ask for it often.
func (s *Store) OldestDue(ctx context.Context) (time.Time, error) {
	return s.meta.OldestDue(ctx)
}

// DueBacklog is the number of claims (not held) and blobs due now, at
// most bound (DueBacklogBound): the sweeper's backlog as an operator
// reads it. byNamespace counts the first bound due claims (earliest
// first) per namespace, from the same read; capped says that read
// stopped at the bound, so a namespace may have more due.
func (s *Store) DueBacklog(ctx context.Context) (n, bound int64, byNamespace map[string]int64, capped bool, err error) {
	d, err := s.meta.DueBacklog(ctx, s.clock.Now(), DueBacklogBound)
	return d.Total, DueBacklogBound, d.ByNamespace, d.ClaimsCapped, err
}
