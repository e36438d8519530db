package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// CommitExisting is the digest-first put; see meta.Store. It takes the
// same locks in the same order as Commit (namespace, then the candidate
// blob), and only the candidate's own row decides: a blob in deleting is
// outside the dedup index and never found here.
func (s *Store) CommitExisting(ctx context.Context, p meta.CommitExistingParams) (meta.CommitResult, bool, error) {
	c := p.Claim
	if c.ID == "" || c.Namespace == "" || p.Digest == "" {
		return meta.CommitResult{}, false, fmt.Errorf("sqlmeta: commit existing: claim id, namespace and digest are required")
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = p.Now
	}
	labels, err := jsonOrNull(c.Labels, len(c.Labels) == 0)
	if err != nil {
		return meta.CommitResult{}, false, fmt.Errorf("sqlmeta: commit existing claim %s: labels: %w", c.ID, err)
	}
	names, err := jsonOrNull(c.ConsumerNames, len(c.ConsumerNames) == 0)
	if err != nil {
		return meta.CommitResult{}, false, fmt.Errorf("sqlmeta: commit existing claim %s: consumer names: %w", c.ID, err)
	}
	var (
		res meta.CommitResult
		hit bool
	)
	err = s.write(ctx, func(q *txq) error {
		res, hit = meta.CommitResult{}, false
		// Look first without creating the namespace row: a miss must
		// change nothing.
		cand, err := scanBlob(q.queryRow(`SELECT `+blobColumns+` FROM blobs
			WHERE namespace = ? AND digest = ? AND dedupable = 1 AND state IN ('committed', 'orphaned')`,
			c.Namespace, p.Digest))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if cand.Size != c.Size || cand.CreatedAt.Before(p.DedupNotBefore) {
			return nil // not shareable: the caller uploads
		}
		if cand.Damaged() || (p.BlobID != "" && (cand.ID != p.BlobID || cand.Key != p.Key)) {
			// A damaged blob is never shared: the caller sends the body,
			// whose commit repairs it. Another blob or object than the
			// one the caller checked: its object was not looked at.
			return nil
		}
		// Lock the candidate (PostgreSQL) before the namespace row (lock
		// order: claim, blobs, namespace), and flip it back below in one
		// compare-and-swap on the state we read.
		cand, err = q.loadBlob(cand.ID, true)
		if err != nil {
			return err
		}
		if cand.State != meta.BlobCommitted && cand.State != meta.BlobOrphaned {
			return errRetry // collected under us: look again
		}
		if cand.Damaged() || (p.BlobID != "" && cand.Key != p.Key) {
			return nil // marked or repaired between the look and the lock
		}
		n, err := q.loadNamespace(c.Namespace)
		if err != nil {
			return err
		}
		if p.QuotaBytes > 0 && n.UsedBytes+n.ReservedBytes+c.Size > p.QuotaBytes {
			return &meta.QuotaError{Namespace: c.Namespace, Resource: "bytes", Limit: p.QuotaBytes,
				Used: n.UsedBytes, Reserved: n.ReservedBytes, Requested: c.Size}
		}
		if p.QuotaClaims > 0 && n.ActiveClaims+n.PendingClaims+1 > p.QuotaClaims {
			return &meta.QuotaError{Namespace: c.Namespace, Resource: "claims", Limit: p.QuotaClaims,
				Used: n.ActiveClaims, Reserved: n.PendingClaims, Requested: 1}
		}
		if err := q.recordTenant(c.Namespace, p.Tenant); err != nil {
			return err
		}
		if err := q.checkTenant(c.Namespace, p.Tenant, c.Size, 1, nsDelta{}); err != nil {
			return err
		}
		now := p.Now.UnixNano()
		changed, err := q.exec(`UPDATE blobs SET state = 'committed', collect_at = NULL, state_at = ?,
			refcount = refcount + 1, version = version + 1
			WHERE id = ? AND state = ? AND dedupable = 1`,
			now, cand.ID, string(cand.State))
		if err != nil {
			return err
		}
		if changed == 0 {
			return errRetry
		}
		if _, err := q.exec(`INSERT INTO claims (`+claimColumns+`)
			VALUES (?, ?, ?, 'active', ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, ?, ?, NULL, '')`,
			c.ID, c.Namespace, cand.ID, c.Size, c.ContentType, labels,
			c.CreatedAt.UnixNano(), ts(c.ExpiresAt), ts(c.DueAt), c.DueReason,
			boolInt(c.DeleteAfterRead), int64(c.RetentionAfterRead), int64(c.GracePeriod),
			int64(max(c.Consumers, 1)), names); err != nil {
			return err
		}
		if err := q.insertLabels(c); err != nil {
			return err
		}
		if err := q.applyNamespace(c.Namespace, nsDelta{used: c.Size, active: 1}); err != nil {
			return err
		}
		res.FlipBack = cand.State == meta.BlobOrphaned
		res.DedupHit = true
		res.Claim, err = q.loadClaim(c.ID, false)
		if err != nil {
			return err
		}
		if res.Blob, err = q.loadBlob(cand.ID, false); err != nil {
			return err
		}
		hit = true
		return q.appendEvents([]meta.Event{createdEvent(res.Claim, res.Blob, p.Now, claimcheck.ActorFrom(q.ctx), true)})
	})
	if s.d.isUniqueViolation(err) {
		err = fmt.Errorf("id already exists: %w", meta.ErrConflict)
	}
	if err != nil {
		return meta.CommitResult{}, false, fmt.Errorf("sqlmeta: commit existing claim %s: %w", c.ID, err)
	}
	return res, hit, nil
}

// Blobs returns a page of blobs in id order; see meta.Store.
func (s *Store) Blobs(ctx context.Context, afterID string, limit int) ([]meta.Blob, error) {
	var out []meta.Blob
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = queryAll(q, scanBlob, `SELECT `+blobColumns+` FROM blobs WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: list blobs after %q: %w", afterID, err)
	}
	return out, nil
}

// LiveRefs counts live claims per blob; see meta.Store.
func (s *Store) LiveRefs(ctx context.Context, blobIDs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(blobIDs))
	err := s.read(ctx, func(q *txq) error {
		return q.liveRefs(blobIDs, out)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: count live references: %w", err)
	}
	return out, nil
}

// liveRefsSQL counts the live claims of n blobs; like liveClaimsOfBlob it
// is answered from the partial index claims_live_blob.
func liveRefsSQL(n int) string {
	return `SELECT blob_id, COUNT(*) FROM claims
		WHERE state IN ('pending', 'active') AND blob_id IN (` + placeholders(n) + `)
		GROUP BY blob_id`
}

func (q *txq) liveRefs(blobIDs []string, into map[string]int64) error {
	return chunks(blobIDs, func(part []string) error {
		rows, err := q.query(liveRefsSQL(len(part)), anys(part)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			into[id] = n
		}
		return rows.Err()
	})
}

// FixRefcounts repairs refcount hints and orphans unreferenced committed
// blobs; see meta.Store. Counting and repairing happen in the write
// transaction, so the count is exact when it is written; a put that
// commits afterwards adds its own +1.
func (s *Store) FixRefcounts(ctx context.Context, blobIDs []string, now time.Time, grace time.Duration) ([]meta.RefFix, error) {
	ids := slices.Sorted(slices.Values(blobIDs))
	var out []meta.RefFix
	err := s.write(ctx, func(q *txq) error {
		out = nil
		// Lock the blobs first (sorted: the package's lock order), then
		// count: a put that points a new claim at one of them must lock it
		// too, so the count cannot miss a claim committed meanwhile.
		blobs := make([]meta.Blob, 0, len(ids))
		for _, id := range ids {
			b, err := q.loadBlob(id, true)
			if errors.Is(err, meta.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			blobs = append(blobs, b)
		}
		live := make(map[string]int64, len(ids))
		if err := q.liveRefs(ids, live); err != nil {
			return err
		}
		for _, b := range blobs {
			var err error
			id := b.ID
			n := live[id]
			fix := meta.RefFix{BlobID: id, Namespace: b.Namespace, State: b.State, Refcount: b.Refcount, Live: n, StoredSize: b.StoredSize}
			switch {
			case b.State == meta.BlobCommitted && n == 0:
				// No live claim: orphan it with a full grace period, so a
				// put racing with this repair can still flip it back.
				fix.Orphaned = true
				_, err = q.exec(`UPDATE blobs SET state = 'orphaned', refcount = 0, collect_at = ?, state_at = ?, version = version + 1
					WHERE id = ? AND state = 'committed'`, now.Add(grace).UnixNano(), now.UnixNano(), id)
			case b.State == meta.BlobStaging || b.State == meta.BlobDeleted:
				continue // staging counts its pending claim; deleted rows are history
			case b.Refcount != n:
				_, err = q.exec(`UPDATE blobs SET refcount = ?, version = version + 1 WHERE id = ? AND state = ?`,
					n, id, string(b.State))
			default:
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, fix)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: fix refcounts: %w", err)
	}
	return out, nil
}

// BlobsByKeys looks up the live owners of object keys; see meta.Store.
func (s *Store) BlobsByKeys(ctx context.Context, keys []string) (map[string]meta.Blob, error) {
	out := make(map[string]meta.Blob, len(keys))
	err := s.read(ctx, func(q *txq) error {
		return chunks(keys, func(part []string) error {
			rows, err := q.query(`SELECT `+blobColumns+` FROM blobs
				WHERE state <> 'deleted' AND object_key IN (`+placeholders(len(part))+`)`, anys(part)...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				b, err := scanBlob(rows)
				if err != nil {
					return err
				}
				out[b.Key] = b
			}
			return rows.Err()
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: look up %d object keys: %w", len(keys), err)
	}
	return out, nil
}

// Cursor returns a named cursor ("" if unset).
func (s *Store) Cursor(ctx context.Context, name string) (string, error) {
	var v string
	err := s.read(ctx, func(q *txq) error {
		err := q.queryRow(`SELECT value FROM cursors WHERE name = ?`, name).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			v = ""
			return nil
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("sqlmeta: cursor %s: %w", name, err)
	}
	return v, nil
}

// SetCursor stores a named cursor.
func (s *Store) SetCursor(ctx context.Context, name, value string) error {
	err := s.write(ctx, func(q *txq) error {
		_, err := q.exec(`INSERT INTO cursors (name, value) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, name, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: set cursor %s: %w", name, err)
	}
	return nil
}

// AppendEvents appends to the events log; see meta.Store.
func (s *Store) AppendEvents(ctx context.Context, events []meta.Event) error {
	if len(events) == 0 {
		return nil
	}
	err := s.write(ctx, func(q *txq) error {
		return q.appendEvents(slices.Clone(events))
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: append %d events: %w", len(events), err)
	}
	return nil
}

// Events returns a page of the events log in order.
func (s *Store) Events(ctx context.Context, afterSeq int64, limit int) ([]meta.Event, error) {
	var out []meta.Event
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = q.events(`WHERE seq > ? ORDER BY seq LIMIT ?`, afterSeq, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: events after %d: %w", afterSeq, err)
	}
	return out, nil
}
