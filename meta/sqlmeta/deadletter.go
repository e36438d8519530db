package sqlmeta

import (
	"context"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// ParkBlob parks a deleting blob as a dead letter; see
// meta.DeadLetterStore. Like CollectFailed it is a compare-and-swap on
// state deleting, so a concurrent run that finished the blob wins and
// the park is a conflict, not damage.
func (s *Store) ParkBlob(ctx context.Context, id, cause string, now time.Time) error {
	err := s.write(ctx, func(q *txq) error {
		n, err := q.exec(`UPDATE blobs SET attempts = attempts + 1, last_error = ?, collect_at = NULL, dead_at = ?, version = version + 1
			WHERE id = ? AND state = 'deleting'`,
			cause, now.UnixNano(), id)
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
		return fmt.Errorf("sqlmeta: park blob %s as a dead letter: %w", id, err)
	}
	return nil
}

// DeadLetters returns a page of parked blobs in id order, of one
// namespace when ns is set. The partial index on parked ids serves both
// forms: parked rows are few, so the namespace is a filter on them.
func (s *Store) DeadLetters(ctx context.Context, ns, afterID string, limit int) ([]meta.Blob, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []meta.Blob
	err := s.read(ctx, func(q *txq) error {
		where, args := ``, []any{afterID}
		if ns != "" {
			where, args = ` AND namespace = ?`, append(args, ns)
		}
		var err error
		out, err = queryAll(q, scanBlob, `SELECT `+blobColumns+` FROM blobs WHERE dead_at IS NOT NULL AND id > ?`+where+` ORDER BY id LIMIT ?`, append(args, limit)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: list dead letters: %w", err)
	}
	return out, nil
}

// CountDeadLetters counts the parked blobs.
func (s *Store) CountDeadLetters(ctx context.Context) (int64, error) {
	var n int64
	err := s.read(ctx, func(q *txq) error {
		return q.queryRow(`SELECT COUNT(*) FROM blobs WHERE dead_at IS NOT NULL`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlmeta: count dead letters: %w", err)
	}
	return n, nil
}

// RetryDeadLetters puts parked blobs back in the due index; see
// meta.DeadLetterStore. The blobs are read and un-parked in one
// transaction (locked on PostgreSQL), so two operators retrying at once
// take each blob back once.
func (s *Store) RetryDeadLetters(ctx context.Context, ids []string, all bool, now time.Time) ([]meta.Blob, error) {
	if !all && len(ids) == 0 {
		return nil, nil
	}
	var out []meta.Blob
	err := s.write(ctx, func(q *txq) error {
		out = nil
		take := func(where string, args ...any) error {
			page, err := queryAll(q, scanBlob, `SELECT `+blobColumns+` FROM blobs WHERE dead_at IS NOT NULL AND state = 'deleting'`+where+` ORDER BY id`+q.d.lockRow, args...)
			if err != nil {
				return err
			}
			for _, b := range page {
				n, err := q.exec(`UPDATE blobs SET attempts = 0, collect_at = ?, dead_at = NULL, version = version + 1
					WHERE id = ? AND dead_at IS NOT NULL AND state = 'deleting'`, now.UnixNano(), b.ID)
				if err != nil {
					return err
				}
				if n == 1 {
					out = append(out, b)
				}
			}
			return nil
		}
		if all {
			return take("")
		}
		return chunks(ids, func(part []string) error {
			return take(` AND id IN (`+placeholders(len(part))+`)`, anys(part)...)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: retry dead letters: %w", err)
	}
	return out, nil
}
