package sqlmeta

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// Damaged blobs (meta.IntegrityStore, migration 0021, ADR 0095).

// MarkDamaged marks a blob damaged; see meta.IntegrityStore. The update is
// a compare-and-swap on the object key and a committed or orphaned state:
// a finding about an object the blob no longer owns (a repair gave it a
// new one, or collection took it) changes nothing.
func (s *Store) MarkDamaged(ctx context.Context, d meta.Damage) (bool, error) {
	if d.BlobID == "" || d.Key == "" || d.Cause == "" {
		return false, fmt.Errorf("sqlmeta: mark damaged: blob id, object key and cause are required")
	}
	damage := d.Cause
	if d.Detail != "" {
		damage += ": " + d.Detail
	}
	var marked bool
	err := s.write(ctx, func(q *txq) error {
		marked = false
		b, err := q.loadBlob(d.BlobID, true)
		if err != nil {
			return err
		}
		n, err := q.exec(`UPDATE blobs SET damaged_at = ?, damage = ?, version = version + 1
			WHERE id = ? AND object_key = ? AND state IN ('committed', 'orphaned') AND damaged_at IS NULL`,
			d.Now.UnixNano(), damage, d.BlobID, d.Key)
		if err != nil || n == 0 {
			return err
		}
		marked = true
		return q.appendEvents([]meta.Event{{At: d.Now, Kind: meta.EventBlobDamaged, Namespace: b.Namespace, BlobID: b.ID,
			Actor: claimcheck.ActorFrom(q.ctx), Reason: d.Cause, Detail: fmt.Sprintf("object %s: %s", d.Key, damage)}})
	})
	if err != nil {
		return false, fmt.Errorf("sqlmeta: mark blob %s damaged: %w", d.BlobID, err)
	}
	return marked, nil
}

// ClearDamage makes a damaged blob healthy again; see meta.IntegrityStore.
func (s *Store) ClearDamage(ctx context.Context, blobID, key string, now time.Time) (bool, error) {
	var cleared bool
	err := s.write(ctx, func(q *txq) error {
		cleared = false
		b, err := q.loadBlob(blobID, true)
		if err != nil {
			return err
		}
		n, err := q.exec(`UPDATE blobs SET damaged_at = NULL, damage = '', version = version + 1
			WHERE id = ? AND object_key = ? AND damaged_at IS NOT NULL`, blobID, key)
		if err != nil || n == 0 {
			return err
		}
		cleared = true
		return q.appendEvents([]meta.Event{{At: now, Kind: meta.EventBlobVerified, Namespace: b.Namespace, BlobID: b.ID,
			Actor: claimcheck.ActorFrom(q.ctx), Detail: fmt.Sprintf("object %s matches its digest again (was: %s)", key, b.Damage)}})
	})
	if err != nil {
		return false, fmt.Errorf("sqlmeta: clear damage of blob %s: %w", blobID, err)
	}
	return cleared, nil
}

// DamagedBlobs returns a page of damaged blobs; see meta.IntegrityStore.
func (s *Store) DamagedBlobs(ctx context.Context, afterID string, limit int) ([]meta.Blob, error) {
	var out []meta.Blob
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = queryAll(q, scanBlob, `SELECT `+blobColumns+` FROM blobs WHERE damaged_at IS NOT NULL AND id > ? ORDER BY id LIMIT ?`, afterID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: damaged blobs: %w", err)
	}
	return out, nil
}

// DedupCandidate returns the dedup candidate of (ns, digest); see
// meta.IntegrityStore.
func (s *Store) DedupCandidate(ctx context.Context, ns, digest string) (meta.Blob, error) {
	var b meta.Blob
	err := s.read(ctx, func(q *txq) error {
		var err error
		b, err = q.dedupCandidate(ns, digest)
		return err
	})
	if err != nil {
		return meta.Blob{}, fmt.Errorf("sqlmeta: %w", err)
	}
	return b, nil
}

// candidateOf is the condition on blobs of the dedup candidate of a
// namespace and digest, its two arguments.
const candidateOf = `namespace = ? AND digest = ? AND dedupable = 1 AND state IN ('committed', 'orphaned')`

// dedupCandidate reads the dedup candidate of (ns, digest), without
// locking it; ErrNotFound if there is none.
func (q *txq) dedupCandidate(ns, digest string) (meta.Blob, error) {
	b, err := scanBlob(q.queryRow(`SELECT `+blobColumns+` FROM blobs WHERE `+candidateOf, ns, digest))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.Blob{}, fmt.Errorf("dedup candidate of %s in %s: %w", digest, ns, meta.ErrNotFound)
	}
	return b, err
}

// repair gives the damaged candidate cand the staging blob's freshly
// written, verified object, in the caller's commit transaction (both rows
// locked): cand takes the staging object's key, stored size and
// compression, becomes healthy, committed and one reference richer, and
// its creation time becomes now (the lifecycle safety net counts from the
// object's creation, and the object is new). The staging blob takes the
// damaged object's key and goes to deleting like any discarded staging
// blob, so the caller deletes the bad object. No claim ever sees the blob
// without an object it owns: the swap is one transaction.
func (q *txq) repair(p meta.CommitParams, cand, staging meta.Blob) (meta.Blob, error) {
	now := p.Now.UnixNano()
	n, err := q.exec(`UPDATE blobs SET object_key = ?, stored_size = ?, compression = ?, created_at = ?,
		damaged_at = NULL, damage = '', state = 'committed', collect_at = NULL, state_at = ?,
		refcount = refcount + 1, version = version + 1
		WHERE id = ? AND state = ? AND object_key = ? AND damaged_at IS NOT NULL`,
		staging.Key, p.StoredSize, p.Compression, now, now, cand.ID, string(cand.State), cand.Key)
	if err != nil {
		return meta.Blob{}, err
	}
	if n == 0 {
		return meta.Blob{}, errRetry // changed under us (cannot happen while locked)
	}
	retryAt := p.Now.Add(p.DiscardRetry).UnixNano()
	if _, err := q.exec(`UPDATE blobs SET state = 'deleting', object_key = ?, size = ?, stored_size = ?, compression = ?,
		refcount = 0, collect_at = ?, state_at = ?, version = version + 1
		WHERE id = ? AND state = 'staging'`,
		cand.Key, cand.Size, cand.StoredSize, cand.Compression, retryAt, now, staging.ID); err != nil {
		return meta.Blob{}, err
	}
	d := staging
	d.Key, d.State, d.Size, d.StoredSize, d.Compression = cand.Key, meta.BlobDeleting, cand.Size, cand.StoredSize, cand.Compression
	d.Refcount, d.CollectAt, d.StateAt, d.Version = 0, p.Now.Add(p.DiscardRetry).UTC(), p.Now.UTC(), staging.Version+1
	return d, q.appendEvents([]meta.Event{{At: p.Now, Kind: meta.EventBlobRepaired, Namespace: cand.Namespace, BlobID: cand.ID,
		ClaimID: p.ClaimID, Actor: claimcheck.ActorFrom(q.ctx),
		Detail: fmt.Sprintf("object %s replaces damaged %s (was: %s)", staging.Key, cand.Key, cand.Damage)}})
}

// Block tables of plain objects (meta.IntegrityStore, migration 0050, ADR 0257).

// SaveBlockTable records the block table of the object at key; see
// meta.IntegrityStore.
func (s *Store) SaveBlockTable(ctx context.Context, key string, table []byte) error {
	err := s.write(ctx, func(q *txq) error {
		// The namespace of the object's blob: the caller's routing hint,
		// else the blob that owns the key (a lookup every shard answers on
		// a distributed store, so the engine's puts give the hint).
		if ns := meta.NamespaceFrom(ctx); ns != "" {
			_, err := q.exec(`INSERT INTO object_blocks (object_key, namespace, sums) VALUES (?, ?, ?)
				ON CONFLICT (object_key, namespace) DO UPDATE SET sums = excluded.sums`, key, ns, hex.EncodeToString(table))
			return err
		}
		_, err := q.exec(`INSERT INTO object_blocks (object_key, namespace, sums)
			SELECT ?, COALESCE((SELECT MIN(namespace) FROM blobs WHERE object_key = ? AND state <> 'deleted'), ''), ?
			ON CONFLICT (object_key, namespace) DO UPDATE SET sums = excluded.sums`, key, key, hex.EncodeToString(table))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: save the block table of %s: %w", key, err)
	}
	return nil
}

// BlockTable returns the block table of the object at key; see
// meta.IntegrityStore.
func (s *Store) BlockTable(ctx context.Context, key string) ([]byte, bool, error) {
	var sums string
	err := s.read(ctx, func(q *txq) error {
		return q.queryRow(`SELECT sums FROM object_blocks WHERE object_key = ?`, key).Scan(&sums)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlmeta: load the block table of %s: %w", key, err)
	}
	table, err := hex.DecodeString(sums)
	if err != nil {
		return nil, false, fmt.Errorf("sqlmeta: the block table of %s is not hex: %w", key, err)
	}
	return table, true, nil
}
