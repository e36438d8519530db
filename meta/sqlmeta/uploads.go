package sqlmeta

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/claimcheck/claimcheck/meta"
)

const uploadColumns = `claim_id, namespace, blob_id, object_key, size, digest, content_type, idempotency_key, created_at`

func scanUpload(row scanner) (meta.Upload, error) {
	var (
		u       meta.Upload
		key     sql.NullString
		created int64
	)
	if err := row.Scan(&u.ClaimID, &u.Namespace, &u.BlobID, &u.Key, &u.Size, &u.Digest, &u.ContentType, &key, &created); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return meta.Upload{}, meta.ErrNotFound
		}
		return meta.Upload{}, err
	}
	u.IdempotencyKey = key.String
	u.CreatedAt = fromTS(sql.NullInt64{Int64: created, Valid: true})
	return u, nil
}

// CreateUpload records the upload of a pending claim; see
// meta.UploadStore. The insert skips on any conflict (ON CONFLICT DO
// NOTHING, the same on both databases), and the row that holds the key is
// then read in a later statement: on PostgreSQL the insert has waited for
// a concurrent transaction holding the same key, so the read sees it.
func (s *Store) CreateUpload(ctx context.Context, u meta.Upload) (meta.Upload, bool, error) {
	if u.ClaimID == "" || u.Namespace == "" || u.BlobID == "" || u.Key == "" || u.Digest == "" {
		return meta.Upload{}, false, fmt.Errorf("sqlmeta: create upload %q: claim id, namespace, blob id, key and digest are required", u.ClaimID)
	}
	var (
		got     meta.Upload
		created bool
	)
	err := s.write(ctx, func(q *txq) error {
		got, created = meta.Upload{}, false
		c, err := q.loadClaim(u.ClaimID, true)
		if err != nil {
			return err
		}
		if c.Namespace != u.Namespace || c.BlobID != u.BlobID {
			return fmt.Errorf("claim %s is in %s on blob %s, not in %s on %s: %w", c.ID, c.Namespace, c.BlobID, u.Namespace, u.BlobID, meta.ErrConflict)
		}
		n, err := q.exec(`INSERT INTO uploads (`+uploadColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`,
			u.ClaimID, u.Namespace, u.BlobID, u.Key, u.Size, u.Digest, u.ContentType,
			nullString(u.IdempotencyKey), u.CreatedAt.UnixNano())
		if err != nil {
			return err
		}
		if n == 1 {
			got, created = u, true
			return nil
		}
		if u.IdempotencyKey != "" {
			got, err = scanUpload(q.queryRow(`SELECT `+uploadColumns+` FROM uploads WHERE namespace = ? AND idempotency_key = ?`,
				u.Namespace, u.IdempotencyKey))
			if err == nil && got.ClaimID != u.ClaimID {
				return nil
			}
			if !errors.Is(err, meta.ErrNotFound) && err != nil {
				return err
			}
		}
		return fmt.Errorf("claim %s already has an upload: %w", u.ClaimID, meta.ErrConflict)
	})
	if err != nil {
		return meta.Upload{}, false, fmt.Errorf("sqlmeta: create upload %s: %w", u.ClaimID, err)
	}
	return got, created, nil
}

// Upload loads the upload of a claim.
func (s *Store) Upload(ctx context.Context, id string) (meta.Upload, error) {
	var u meta.Upload
	err := s.read(ctx, func(q *txq) error {
		var err error
		u, err = scanUpload(q.queryRow(`SELECT `+uploadColumns+` FROM uploads WHERE claim_id = ?`, id))
		return err
	})
	if err != nil {
		return meta.Upload{}, fmt.Errorf("sqlmeta: load upload %s: %w", id, err)
	}
	return u, nil
}

// UploadByKey loads the upload with an idempotency key.
func (s *Store) UploadByKey(ctx context.Context, ns, key string) (meta.Upload, error) {
	var u meta.Upload
	err := s.read(ctx, func(q *txq) error {
		var err error
		u, err = scanUpload(q.queryRow(`SELECT `+uploadColumns+` FROM uploads WHERE namespace = ? AND idempotency_key = ?`, ns, key))
		return err
	})
	if err != nil {
		return meta.Upload{}, fmt.Errorf("sqlmeta: load upload of key %q in %s: %w", key, ns, err)
	}
	return u, nil
}

// Secret returns the named secret, storing candidate if there is none;
// the first writer wins and everyone reads its value.
func (s *Store) Secret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if len(candidate) == 0 {
		return nil, fmt.Errorf("sqlmeta: secret %s: empty candidate", name)
	}
	var value string
	err := s.write(ctx, func(q *txq) error {
		if _, err := q.exec(`INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING`,
			name, hex.EncodeToString(candidate)); err != nil {
			return err
		}
		return q.queryRow(`SELECT value FROM secrets WHERE name = ?`, name).Scan(&value)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: secret %s: %w", name, err)
	}
	b, err := hex.DecodeString(value)
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: secret %s: stored value is not hex: %w", name, err)
	}
	return b, nil
}

// CreateResumable records a resumable upload; see meta.ResumableStore.
func (s *Store) CreateResumable(ctx context.Context, u meta.Upload, handle string) error {
	if u.ClaimID == "" || u.Namespace == "" || u.BlobID == "" || u.Key == "" || u.IdempotencyKey != "" {
		return fmt.Errorf("sqlmeta: create resumable upload %q: claim id, namespace, blob id and key are required, an idempotency key is not taken", u.ClaimID)
	}
	err := s.write(ctx, func(q *txq) error {
		c, err := q.loadClaim(u.ClaimID, true)
		if err != nil {
			return err
		}
		if c.State != meta.ClaimPending || c.Namespace != u.Namespace || c.BlobID != u.BlobID {
			return fmt.Errorf("claim %s is %s in %s on blob %s, not pending in %s on %s: %w", c.ID, c.State, c.Namespace, c.BlobID, u.Namespace, u.BlobID, meta.ErrConflict)
		}
		n, err := q.exec(`INSERT INTO uploads (`+uploadColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			u.ClaimID, u.Namespace, u.BlobID, u.Key, u.Size, u.Digest, u.ContentType, nil, u.CreatedAt.UnixNano())
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("claim %s already has an upload: %w", u.ClaimID, meta.ErrConflict)
		}
		if _, err := q.exec(`INSERT INTO upload_progress (claim_id, received, updated_at, namespace) VALUES (?, 0, ?, ?)`,
			u.ClaimID, u.CreatedAt.UnixNano(), u.Namespace); err != nil {
			return err
		}
		_, err = q.exec(`UPDATE blobs SET append_handle = ? WHERE id = ?`, handle, u.BlobID)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: create resumable upload %s: %w", u.ClaimID, err)
	}
	return nil
}

// Resumable loads a resumable upload; see meta.ResumableStore.
func (s *Store) Resumable(ctx context.Context, id string) (meta.ResumableUpload, error) {
	var r meta.ResumableUpload
	err := s.read(ctx, func(q *txq) error {
		var err error
		if r.Upload, err = scanUpload(q.queryRow(`SELECT `+uploadColumns+` FROM uploads WHERE claim_id = ?`, id)); err != nil {
			return err
		}
		var state string
		err = q.queryRow(`SELECT p.received, p.hash_state, p.hashed_to, b.append_handle FROM upload_progress p, blobs b
			WHERE p.claim_id = ? AND b.id = ?`, id, r.BlobID).Scan(&r.Received, &state, &r.HashedTo, &r.Handle)
		if errors.Is(err, sql.ErrNoRows) {
			return meta.ErrNotFound // a direct upload of the other kind
		}
		if err != nil {
			return err
		}
		if r.HashState, err = hex.DecodeString(state); err != nil {
			return fmt.Errorf("hash state: %w", err)
		}
		return nil
	})
	if err != nil {
		return meta.ResumableUpload{}, fmt.Errorf("sqlmeta: load resumable upload %s: %w", id, err)
	}
	return r, nil
}

// RecordReceived records an append's progress; see meta.ResumableStore.
// The claim row is locked first, as the reaper's finish locks it, so
// progress and reaping are ordered: an append recorded after the
// reaper won fails with ErrConflict and its caller discards the bytes.
func (s *Store) RecordReceived(ctx context.Context, p meta.Received) error {
	err := s.write(ctx, func(q *txq) error {
		c, err := q.loadClaim(p.ID, true)
		if err != nil {
			return err
		}
		if c.State != meta.ClaimPending || c.BlobID != p.BlobID {
			return fmt.Errorf("claim %s is %s: %w", p.ID, c.State, meta.ErrConflict)
		}
		var n int64
		if p.HashState != nil {
			n, err = q.exec(`UPDATE upload_progress SET received = ?, hash_state = ?, hashed_to = ?, updated_at = ?
				WHERE claim_id = ? AND received = ?`, p.To, hex.EncodeToString(p.HashState), p.To, p.Now.UnixNano(), p.ID, p.From)
		} else {
			n, err = q.exec(`UPDATE upload_progress SET received = ?, updated_at = ? WHERE claim_id = ? AND received = ?`,
				p.To, p.Now.UnixNano(), p.ID, p.From)
		}
		if err != nil {
			return err
		}
		if n != 1 {
			var got int64
			if err := q.queryRow(`SELECT received FROM upload_progress WHERE claim_id = ?`, p.ID).Scan(&got); errors.Is(err, sql.ErrNoRows) {
				return meta.ErrNotFound
			}
			return fmt.Errorf("%d bytes are recorded, not %d: %w", got, p.From, meta.ErrConflict)
		}
		return q.raisePendingDue(p.ID, p.BlobID, p.DueAt)
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: record %d bytes received by upload %s: %w", p.To, p.ID, err)
	}
	return nil
}

// Restage moves a pending claim to a new staging blob; see
// meta.ResumableStore. The old blob keeps its append handle, so its
// collection also aborts what the storage may still hold of it.
func (s *Store) Restage(ctx context.Context, p meta.RestageParams) error {
	err := s.write(ctx, func(q *txq) error {
		c, err := q.loadClaim(p.ClaimID, true)
		if err != nil {
			return err
		}
		if c.State != meta.ClaimPending || c.BlobID != p.From {
			return fmt.Errorf("claim %s is %s on blob %s, not pending on %s: %w", c.ID, c.State, c.BlobID, p.From, meta.ErrConflict)
		}
		nowNS := p.Now.UnixNano()
		if _, err := q.exec(`INSERT INTO blobs (id, namespace, digest, size, stored_size, compression, object_key,
			state, refcount, created_at, state_at, collect_at, version)
			VALUES (?, ?, NULL, 0, 0, '', ?, 'staging', 1, ?, ?, ?, 1)`,
			p.To.ID, c.Namespace, p.To.Key, p.To.CreatedAt.UnixNano(), nowNS, ts(c.DueAt)); err != nil {
			return err
		}
		if _, err := q.exec(`UPDATE claims SET blob_id = ? WHERE id = ? AND state = 'pending'`, p.To.ID, c.ID); err != nil {
			return err
		}
		_, err = q.exec(`UPDATE blobs SET state = 'orphaned', refcount = 0, collect_at = ?, state_at = ?, version = version + 1
			WHERE id = ? AND state = 'staging'`, ts(p.FromCollectAt), nowNS, p.From)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: restage claim %s from blob %s to %s: %w", p.ClaimID, p.From, p.To.ID, err)
	}
	return nil
}
