package engine

import (
	"context"
	"time"
)

// OldestDue is the earliest due time over claims and blobs (the zero
// time when nothing is ever due): the figure the sweeper's lag is
// measured from (claimcheck_sweeper_lag_seconds). It is one read of the
// due index, not a count, so the console may ask for it often.
func (s *Store) OldestDue(ctx context.Context) (time.Time, error) {
	return s.meta.OldestDue(ctx)
}
