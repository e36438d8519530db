package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

const keyColumns = `id, tenant, role, namespace, name, hash, created_at, revoked_at`

func scanKey(sc scanner) (meta.APIKey, error) {
	var k meta.APIKey
	var created int64
	var revoked sql.NullInt64
	if err := sc.Scan(&k.ID, &k.Tenant, &k.Role, &k.Namespace, &k.Name, &k.Hash, &created, &revoked); err != nil {
		return k, err
	}
	k.CreatedAt = time.Unix(0, created).UTC()
	if revoked.Valid {
		k.RevokedAt = time.Unix(0, revoked.Int64).UTC()
	}
	return k, nil
}

// logKey appends the audit event of creating or revoking key k (see
// meta.EventKeyCreated) in the transaction that does it.
func (q *txq) logKey(kind string, k meta.APIKey, at time.Time) error {
	return q.appendEvents([]meta.Event{{At: at, Kind: kind, Namespace: k.Namespace, Tenant: k.Tenant,
		Actor: claimcheck.ActorFrom(q.ctx), Detail: meta.KeyEventDetail(k)}})
}

// CreateKey inserts an API key; see meta.KeyStore.
func (s *Store) CreateKey(ctx context.Context, k meta.APIKey, limit int) error {
	err := s.write(ctx, func(q *txq) error {
		if limit > 0 {
			var n int
			if err := q.queryRow(`SELECT COUNT(*) FROM api_keys WHERE tenant = ? AND revoked_at IS NULL`, k.Tenant).Scan(&n); err != nil {
				return err
			}
			if n >= limit {
				return fmt.Errorf("tenant %s has %d: %w", k.Tenant, n, meta.ErrLimitReached)
			}
		}
		if _, err := q.exec(`INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)`,
			k.ID, k.Tenant, k.Role, k.Namespace, k.Name, k.Hash, k.CreatedAt.UnixNano()); err != nil {
			return err
		}
		return q.logKey(meta.EventKeyCreated, k, k.CreatedAt)
	})
	if s.d.isUniqueViolation(err) {
		err = fmt.Errorf("id already exists: %w", meta.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlmeta: create key %s: %w", k.ID, err)
	}
	return nil
}

// Key loads an API key; see meta.KeyStore. It reads the row every time
// (no cache), so a revoke is seen by the next request.
func (s *Store) Key(ctx context.Context, id string) (meta.APIKey, error) {
	var k meta.APIKey
	err := s.read(ctx, func(q *txq) error {
		var err error
		k, err = scanKey(q.queryRow(`SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = meta.ErrNotFound
	}
	if err != nil {
		return meta.APIKey{}, fmt.Errorf("sqlmeta: key %s: %w", id, err)
	}
	return k, nil
}

// Keys lists API keys; see meta.KeyStore.
func (s *Store) Keys(ctx context.Context, tenant string) ([]meta.APIKey, error) {
	var out []meta.APIKey
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = queryAll(q, scanKey, `SELECT `+keyColumns+` FROM api_keys WHERE ? = '' OR tenant = ? ORDER BY created_at, id`, tenant, tenant)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: list keys: %w", err)
	}
	return out, nil
}

// KeyPage lists a page of a tenant's keys; see meta.KeyStore.
func (s *Store) KeyPage(ctx context.Context, tenant string, afterCreated time.Time, afterID string, limit int) ([]meta.APIKey, error) {
	after := int64(0)
	if !afterCreated.IsZero() {
		after = afterCreated.UnixNano()
	}
	var out []meta.APIKey
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = queryAll(q, scanKey, `SELECT `+keyColumns+` FROM api_keys
			WHERE tenant = ? AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?`,
			tenant, after, after, afterID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: list keys of %s: %w", tenant, err)
	}
	return out, nil
}

// RevokeKey revokes an API key; see meta.KeyStore.
func (s *Store) RevokeKey(ctx context.Context, id, tenant string, now time.Time) (meta.APIKey, error) {
	var k meta.APIKey
	err := s.write(ctx, func(q *txq) error {
		n, err := q.exec(`UPDATE api_keys SET revoked_at = ? WHERE id = ? AND (? = '' OR tenant = ?) AND revoked_at IS NULL`,
			now.UnixNano(), id, tenant, tenant)
		if err != nil {
			return err
		}
		k, err = scanKey(q.queryRow(`SELECT `+keyColumns+` FROM api_keys WHERE id = ? AND (? = '' OR tenant = ?)`, id, tenant, tenant))
		if err != nil || n == 0 {
			return err // revoked before: nothing changed, nothing to log
		}
		return q.logKey(meta.EventKeyRevoked, k, now)
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = meta.ErrNotFound
	}
	if err != nil {
		return meta.APIKey{}, fmt.Errorf("sqlmeta: revoke key %s: %w", id, err)
	}
	return k, nil
}
