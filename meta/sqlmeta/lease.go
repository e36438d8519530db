package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// TryLease takes or renews a named lease; see meta.Store. One upsert
// decides: it inserts a free lease, or overwrites one that is expired or
// already ours, and changes no row when someone else holds it. Concurrent
// callers are serialised by the row (PostgreSQL) or the writer (SQLite),
// so exactly one of them gets a free lease. A renewal keeps a release
// request made of the holder; a lease that changes hands drops it.
func (s *Store) TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	var got bool
	err := s.write(ctx, func(q *txq) error {
		n, err := q.exec(`INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
				release_requested = CASE WHEN leases.holder = excluded.holder THEN leases.release_requested ELSE 0 END
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

// RequestLeaseRelease asks a lease's holder to give it up; see
// meta.Store. A request already made changes no row.
func (s *Store) RequestLeaseRelease(ctx context.Context, name, holder string) error {
	err := s.write(ctx, func(q *txq) error {
		_, err := q.exec(`UPDATE leases SET release_requested = 1
			WHERE name = ? AND holder <> ? AND release_requested = 0`, name, holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: request release of lease %s: %w", name, err)
	}
	return nil
}

// Leases reads the live leases under a prefix; see meta.Store. The
// prefix is matched with LIKE, its wildcards escaped.
func (s *Store) Leases(ctx context.Context, prefix string, now time.Time) ([]meta.LeaseHolding, error) {
	var out []meta.LeaseHolding
	err := s.read(ctx, func(q *txq) error {
		out = out[:0]
		rows, err := q.query(`SELECT name, holder, release_requested FROM leases
			WHERE name LIKE ? ESCAPE '\' AND expires_at > ? ORDER BY name`, likePrefix(prefix), now.UnixNano())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l meta.LeaseHolding
			var requested int64
			if err := rows.Scan(&l.Name, &l.Holder, &requested); err != nil {
				return err
			}
			l.ReleaseRequested = requested != 0
			out = append(out, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: leases %s*: %w", prefix, err)
	}
	return out, nil
}

// CheckLease reads whether holder has a lease and was asked to give it
// up; see meta.Store.
func (s *Store) CheckLease(ctx context.Context, name, holder string, now time.Time) (held, releaseRequested bool, err error) {
	err = s.read(ctx, func(q *txq) error {
		var requested int64
		err := q.queryRow(`SELECT release_requested FROM leases
			WHERE name = ? AND holder = ? AND expires_at > ?`, name, holder, now.UnixNano()).Scan(&requested)
		if errors.Is(err, sql.ErrNoRows) {
			held, releaseRequested = false, false
			return nil
		}
		held, releaseRequested = err == nil, requested != 0
		return err
	})
	if err != nil {
		return false, false, fmt.Errorf("sqlmeta: check lease %s: %w", name, err)
	}
	return held, releaseRequested, nil
}

// likePrefix is the LIKE pattern (escape character \) of the names
// beginning with prefix.
func likePrefix(prefix string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
}
