package sqlmeta

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// PruneHistory deletes finished claims, collected blobs and expired
// leases older than before; see meta.HistoryStore. Claims go first, so that the blobs they
// pointed at lose their last reference in the same call.
func (s *Store) PruneHistory(ctx context.Context, before time.Time, limit int) (meta.PruneResult, error) {
	var res meta.PruneResult
	if limit <= 0 {
		return res, nil
	}
	cut := before.UnixNano()
	err := s.write(ctx, func(q *txq) error {
		res.Claims = 0
		found := make(map[string]bool, limit)
		if err := q.execReturningIDs(found, `SELECT id FROM claims WHERE state = 'deleted' AND deleted_at < ?
			ORDER BY deleted_at LIMIT ?`, cut, limit); err != nil || len(found) == 0 {
			return err
		}
		ids := slices.Collect(maps.Keys(found))
		// Rows that reference a claim go with it: the consumers that
		// released it, the upload it came from (its idempotency key
		// may then name a new upload) and its label rows (0022).
		for _, table := range []string{"claim_releases", "upload_progress", "uploads", "claim_labels"} {
			if err := chunks(ids, func(part []string) error {
				_, err := q.exec(`DELETE FROM `+table+` WHERE claim_id IN (`+placeholders(len(part))+`)`, anys(part)...)
				return err
			}); err != nil {
				return err
			}
		}
		return chunks(ids, func(part []string) error {
			n, err := q.exec(`DELETE FROM claims WHERE state = 'deleted' AND id IN (`+placeholders(len(part))+`)`, anys(part)...)
			res.Claims += int(n)
			return err
		})
	})
	if err != nil {
		return meta.PruneResult{}, fmt.Errorf("sqlmeta: prune claims finished before %s: %w", before.Format(time.RFC3339), err)
	}
	err = s.write(ctx, func(q *txq) error {
		// A deleted blob owns no object (the backstop treats its key as
		// unknown) and is outside the dedup index, so its row only serves
		// as history. The claims check skips a blob that a claim row still
		// points at: the claim was finished after the blob's collection by
		// a replica whose clock ran ahead, and goes a little later.
		n, err := q.exec(`DELETE FROM blobs WHERE id IN (
			SELECT id FROM blobs WHERE state = 'deleted' AND state_at < ?
				AND NOT EXISTS (SELECT 1 FROM claims WHERE claims.blob_id = blobs.id)
			ORDER BY state_at LIMIT ?) AND state = 'deleted'`, cut, limit)
		res.Blobs = int(n)
		if err != nil {
			return err
		}
		// A lease is released by deleting its row; one that expired
		// before the cut was left by a holder that died (a resumable
		// upload's lock on a replica that crashed, ADR 0185) and is free
		// anyway. Leases are few: the live locks and such leftovers.
		_, err = q.exec(`DELETE FROM leases WHERE expires_at < ?`, cut)
		return err
	})
	if err != nil {
		return meta.PruneResult{Claims: res.Claims}, fmt.Errorf("sqlmeta: prune blobs collected before %s: %w", before.Format(time.RFC3339), err)
	}
	return res, nil
}
