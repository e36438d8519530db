package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// BeginCollect takes a page of due blobs for deletion; see meta.Store.
//
// This is the transaction that makes collection safe (ADR-0019): a blob
// leaves orphaned (or staging) for deleting only in an UPDATE whose own
// WHERE clause finds no pending or active claim pointing at it, in the
// transaction that holds the blob (on PostgreSQL the page is locked with
// SKIP LOCKED first, and Commit must lock a blob to point a claim at it).
// The refcount is not trusted. A referenced orphaned blob is drift and is
// repaired here (back to committed, refcount recounted); a staging blob
// whose pending claim has not been finished yet is put off by retry: its
// claim's sweep comes first.
func (s *Store) BeginCollect(ctx context.Context, now time.Time, limit int, retry time.Duration) ([]meta.Blob, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []meta.Blob
	err := s.write(ctx, func(q *txq) error {
		out = nil
		nowNS, retryNS := now.UnixNano(), now.Add(retry).UnixNano()
		rows, err := q.query(`SELECT `+blobColumns+` FROM blobs
			WHERE collect_at IS NOT NULL AND collect_at <= ? AND state IN ('staging', 'orphaned', 'deleting')
			ORDER BY collect_at LIMIT ?`+q.d.skipLocked,
			nowNS, limit)
		if err != nil {
			return err
		}
		var (
			due              []meta.Blob
			retries, candIDs []string
		)
		for rows.Next() {
			b, err := scanBlob(rows)
			if err != nil {
				rows.Close()
				return err
			}
			due = append(due, b)
			if b.State == meta.BlobDeleting {
				retries = append(retries, b.ID) // a previous attempt died or failed
			} else {
				candIDs = append(candIDs, b.ID)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}

		taken := make(map[string]bool, len(due))
		err = chunks(retries, func(part []string) error {
			args := append([]any{retryNS}, anys(part)...)
			return q.execReturningIDs(taken, `UPDATE blobs SET collect_at = ?, version = version + 1
				WHERE state = 'deleting' AND id IN (`+placeholders(len(part))+`) RETURNING id`, args...)
		})
		if err != nil {
			return err
		}
		err = chunks(candIDs, func(part []string) error {
			args := append([]any{retryNS, nowNS}, anys(part)...)
			return q.execReturningIDs(taken, `UPDATE blobs SET state = 'deleting', collect_at = ?, state_at = ?, version = version + 1
				WHERE state IN ('staging', 'orphaned') AND id IN (`+placeholders(len(part))+`)
				AND NOT EXISTS (SELECT 1 `+liveClaimsOfBlob+`)
				RETURNING id`, args...)
		})
		if err != nil {
			return err
		}

		for _, b := range due {
			if taken[b.ID] {
				if b.State != meta.BlobDeleting {
					b.StateAt = now.UTC()
				}
				b.State, b.CollectAt, b.Version = meta.BlobDeleting, now.Add(retry).UTC(), b.Version+1
				out = append(out, b)
				continue
			}
			switch b.State {
			case meta.BlobOrphaned: // drift: a live claim still points at it
				_, err = q.exec(`UPDATE blobs SET state = 'committed', collect_at = NULL, state_at = ?, version = version + 1,
					refcount = (SELECT COUNT(*) `+liveClaimsOfBlob+`)
					WHERE id = ? AND state = 'orphaned'`,
					nowNS, b.ID)
			case meta.BlobStaging: // its pending claim is not finished yet
				_, err = q.exec(`UPDATE blobs SET collect_at = ?, version = version + 1 WHERE id = ? AND state = 'staging'`,
					retryNS, b.ID)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: begin collect: %w", err)
	}
	return out, nil
}

// FinishCollect marks deleting blobs deleted; others are left alone.
func (s *Store) FinishCollect(ctx context.Context, ids []string, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.write(ctx, func(q *txq) error {
		return chunks(ids, func(part []string) error {
			// The block tables of the objects go with them (ADR 0257).
			if _, err := q.exec(`DELETE FROM object_blocks WHERE object_key IN
				(SELECT object_key FROM blobs WHERE id IN (`+placeholders(len(part))+`) AND state = 'deleting')`, anys(part)...); err != nil {
				return err
			}
			args := append([]any{now.UnixNano()}, anys(part)...)
			_, err := q.exec(`UPDATE blobs SET state = 'deleted', dedupable = 0, collect_at = NULL, state_at = ?, version = version + 1
				WHERE id IN (`+placeholders(len(part))+`) AND state = 'deleting'`, args...)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: finish collect: %w", err)
	}
	return nil
}

// CollectFailed records a failed object delete of a deleting blob:
// attempts+1, the error, and the next attempt's time. ErrConflict if the
// blob is not deleting, ErrNotFound if there is no such blob.
func (s *Store) CollectFailed(ctx context.Context, id string, cause string, retryAt time.Time) error {
	err := s.write(ctx, func(q *txq) error {
		n, err := q.exec(`UPDATE blobs SET attempts = attempts + 1, last_error = ?, collect_at = ?, version = version + 1
			WHERE id = ? AND state = 'deleting'`,
			cause, retryAt.UnixNano(), id)
		if err != nil || n == 1 {
			return err
		}
		b, err := q.loadBlob(id, false)
		if err != nil {
			return err
		}
		return fmt.Errorf("blob is %s, not deleting: %w", b.State, meta.ErrConflict)
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: record failed collection of blob %s: %w", id, err)
	}
	return nil
}

// OldestDue returns the earliest due time over claims and blobs (the
// minimum of each partial index), or the zero time.
func (s *Store) OldestDue(ctx context.Context) (time.Time, error) {
	var oldest time.Time
	err := s.read(ctx, func(q *txq) error {
		for _, query := range []string{
			`SELECT MIN(due_at) FROM claims WHERE due_at IS NOT NULL AND parked = 0`,
			`SELECT MIN(collect_at) FROM blobs WHERE collect_at IS NOT NULL`,
		} {
			var v sql.NullInt64
			if err := q.queryRow(query).Scan(&v); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if t := fromTS(v); !t.IsZero() && (oldest.IsZero() || t.Before(oldest)) {
				oldest = t
			}
		}
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlmeta: oldest due time: %w", err)
	}
	return oldest, nil
}

// DueBacklog counts due claims and blobs, at most bound of each read;
// see meta.Store. The predicates are the partial indexes' (claims_due_at,
// blobs_collect_at), so each count is one bounded index range; the
// claims' range, earliest due first, is grouped by namespace as it is
// read, so the breakdown costs no second read.
func (s *Store) DueBacklog(ctx context.Context, now time.Time, bound int) (meta.DueBacklog, error) {
	if bound <= 0 {
		return meta.DueBacklog{ByNamespace: map[string]int64{}}, nil
	}
	var out meta.DueBacklog
	err := s.read(ctx, func(q *txq) error {
		out = meta.DueBacklog{ByNamespace: map[string]int64{}}
		rows, err := q.query(`SELECT namespace, COUNT(*) FROM (SELECT namespace FROM claims
			WHERE due_at IS NOT NULL AND parked = 0 AND due_at <= ? ORDER BY due_at LIMIT ?) AS due
			GROUP BY namespace`, now.UnixNano(), bound)
		if err != nil {
			return err
		}
		defer rows.Close()
		var claims int64
		for rows.Next() {
			var ns string
			var n int64
			if err := rows.Scan(&ns, &n); err != nil {
				return err
			}
			out.ByNamespace[ns] = n
			claims += n
		}
		if err := rows.Err(); err != nil {
			return err
		}
		out.ClaimsCapped = claims >= int64(bound)
		var blobs int64
		if err := q.queryRow(`SELECT COUNT(*) FROM (SELECT 1 FROM blobs WHERE collect_at IS NOT NULL AND collect_at <= ? LIMIT ?) AS due`,
			now.UnixNano(), bound).Scan(&blobs); err != nil {
			return err
		}
		out.Total = min(claims+blobs, int64(bound))
		return nil
	})
	if err != nil {
		return meta.DueBacklog{}, fmt.Errorf("sqlmeta: due backlog: %w", err)
	}
	return out, nil
}
