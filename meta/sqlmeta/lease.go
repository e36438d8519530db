package sqlmeta

import (
	"context"
	"fmt"
	"time"
)

// TryLease takes or renews a named lease; see meta.Store. One upsert
// decides: it inserts a free lease, or overwrites one that is expired or
// already ours, and changes no row when someone else holds it. Concurrent
// callers are serialised by the row (PostgreSQL) or the writer (SQLite),
// so exactly one of them gets a free lease.
func (s *Store) TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	var got bool
	err := s.write(ctx, func(q *txq) error {
		n, err := q.exec(`INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
			WHERE leases.holder = excluded.holder OR leases.expires_at <= ?`,
			name, holder, now.Add(ttl).UnixNano(), now.UnixNano())
		got = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlmeta: lease %s: %w", name, err)
	}
	return got, nil
}

// ReleaseLease gives a lease up; see meta.Store.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	err := s.write(ctx, func(q *txq) error {
		_, err := q.exec(`DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: release lease %s: %w", name, err)
	}
	return nil
}
