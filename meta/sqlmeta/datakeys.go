package sqlmeta

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// Data keys of encrypted namespaces (meta.DataKeyStore, migration 0014).

const dataKeyColumns = `id, namespace, master_key_id, wrapped, created_at, destroyed_at`

func scanDataKey(row scanner) (meta.DataKey, error) {
	var (
		k         meta.DataKey
		wrapped   string
		created   int64
		destroyed sql.NullInt64
	)
	if err := row.Scan(&k.ID, &k.Namespace, &k.MasterKeyID, &wrapped, &created, &destroyed); err != nil {
		return meta.DataKey{}, err
	}
	k.CreatedAt = time.Unix(0, created).UTC()
	k.DestroyedAt = fromTS(destroyed)
	if wrapped != "" {
		b, err := base64.StdEncoding.DecodeString(wrapped)
		if err != nil {
			return meta.DataKey{}, fmt.Errorf("data key %s: wrapped key: %w", k.ID, err)
		}
		k.Wrapped = b
	}
	return k, nil
}

func (q *txq) liveDataKey(ns string, lock bool) (meta.DataKey, error) {
	query := `SELECT ` + dataKeyColumns + ` FROM data_keys WHERE namespace = ? AND destroyed_at IS NULL`
	if lock {
		query += q.d.lockRow
	}
	k, err := scanDataKey(q.queryRow(query, ns))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.DataKey{}, fmt.Errorf("live data key of %s: %w", ns, meta.ErrNotFound)
	}
	return k, err
}

// CreateDataKey inserts k unless ns has a live key; see meta.DataKeyStore.
func (s *Store) CreateDataKey(ctx context.Context, k meta.DataKey) (meta.DataKey, error) {
	if k.ID == "" || k.Namespace == "" || len(k.Wrapped) == 0 || k.MasterKeyID == "" {
		return meta.DataKey{}, fmt.Errorf("sqlmeta: create data key: id, namespace, master key id and wrapped key are required")
	}
	var live meta.DataKey
	err := s.write(ctx, func(q *txq) error {
		// The partial unique index allows one live key per namespace; a
		// concurrent creator's insert does nothing and both read the
		// winner.
		n, err := q.exec(`INSERT INTO data_keys (`+dataKeyColumns+`) VALUES (?, ?, ?, ?, ?, NULL) ON CONFLICT DO NOTHING`,
			k.ID, k.Namespace, k.MasterKeyID, base64.StdEncoding.EncodeToString(k.Wrapped), k.CreatedAt.UnixNano())
		if err != nil {
			return err
		}
		if n == 1 {
			// Every blob of the namespace so far was written in clear or
			// under a destroyed key: none may be shared by a claim that
			// is to be encrypted under the new key.
			if _, err := q.exec(`UPDATE blobs SET dedupable = 0, version = version + 1
				WHERE namespace = ? AND dedupable = 1 AND state IN ('committed', 'orphaned')`, k.Namespace); err != nil {
				return err
			}
		}
		live, err = q.liveDataKey(k.Namespace, false)
		return err
	})
	if err != nil {
		return meta.DataKey{}, fmt.Errorf("sqlmeta: create data key of %s: %w", k.Namespace, err)
	}
	return live, nil
}

// LiveDataKey returns the live key of ns; see meta.DataKeyStore.
func (s *Store) LiveDataKey(ctx context.Context, ns string) (meta.DataKey, error) {
	var k meta.DataKey
	err := s.read(ctx, func(q *txq) error {
		var err error
		k, err = q.liveDataKey(ns, false)
		return err
	})
	if err != nil {
		return meta.DataKey{}, fmt.Errorf("sqlmeta: %w", err)
	}
	return k, nil
}

// DataKey loads a key by id; see meta.DataKeyStore.
func (s *Store) DataKey(ctx context.Context, id string) (meta.DataKey, error) {
	var k meta.DataKey
	err := s.read(ctx, func(q *txq) error {
		var err error
		k, err = scanDataKey(q.queryRow(`SELECT `+dataKeyColumns+` FROM data_keys WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("data key %s: %w", id, meta.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return meta.DataKey{}, fmt.Errorf("sqlmeta: %w", err)
	}
	return k, nil
}

// DestroyDataKey shreds the live key of ns; see meta.DataKeyStore.
func (s *Store) DestroyDataKey(ctx context.Context, ns string, now time.Time) (meta.DataKey, error) {
	var k meta.DataKey
	err := s.shred(ctx, func(q *txq) error {
		// Lock order as in SetNamespaceHold: the namespace row first, so
		// a hold and a shred of one namespace are serialised.
		if err := q.ensureNamespace(ns); err != nil {
			return err
		}
		if _, err := q.loadNamespace(ns); err != nil {
			return err
		}
		if h, err := q.namespaceHold(ns); err != nil {
			return err
		} else if h != nil {
			return fmt.Errorf("namespace %s is on legal hold (%q): %w", ns, h.Reason, meta.ErrHeld)
		}
		var held int64
		if err := q.queryRow(`SELECT COUNT(*) FROM claims WHERE namespace = ? AND held_at IS NOT NULL AND state = 'active'`, ns).Scan(&held); err != nil {
			return err
		}
		if held > 0 {
			return fmt.Errorf("%d claims of namespace %s are on legal hold: %w", held, ns, meta.ErrHeld)
		}
		var err error
		if k, err = q.liveDataKey(ns, true); err != nil {
			return err
		}
		if _, err := q.exec(`UPDATE data_keys SET wrapped = '', destroyed_at = ? WHERE id = ? AND destroyed_at IS NULL`, now.UnixNano(), k.ID); err != nil {
			return err
		}
		// Objects under the destroyed key must never be shared by a new
		// claim: they leave dedup here (the engine also shares only blobs
		// younger than the live key, but clocks of replicas may differ).
		suffix := "." + k.ID
		if _, err := q.exec(`UPDATE blobs SET dedupable = 0, version = version + 1
			WHERE namespace = ? AND dedupable = 1 AND state IN ('committed', 'orphaned')
			AND substr(object_key, length(object_key) - ? + 1) = ?`, ns, len(suffix), suffix); err != nil {
			return err
		}
		// What the shred leaves of the namespace's claims says nothing
		// about their content (ADR 0096): labels are cleared, and the
		// sha256 of the plaintext, which confirms a guess of a short
		// payload, leaves the blobs under the destroyed key (they are
		// outside dedup from here on and their bytes can never be
		// served, so nothing needs it).
		if _, err := q.exec(`UPDATE claims SET labels = NULL WHERE namespace = ? AND labels IS NOT NULL`, ns); err != nil {
			return err
		}
		// The label rows of the listing index (0022) are a copy of those
		// labels: they go too, in the same erasing transaction.
		if _, err := q.exec(`DELETE FROM claim_labels WHERE namespace = ?`, ns); err != nil {
			return err
		}
		if _, err := q.exec(`UPDATE blobs SET digest = NULL, damage = '', version = version + 1
			WHERE namespace = ? AND digest IS NOT NULL
			AND substr(object_key, length(object_key) - ? + 1) = ?`, ns, len(suffix), suffix); err != nil {
			return err
		}
		if err := q.endUploadsOf(ns, now); err != nil {
			return err
		}
		k.Wrapped, k.DestroyedAt = nil, now.UTC()
		return q.appendEvents([]meta.Event{{At: now, Kind: meta.EventDataKeyDestroyed, Namespace: ns,
			Actor: claimcheck.ActorFrom(q.ctx), Detail: "key " + k.ID}})
	})
	if err != nil {
		return meta.DataKey{}, fmt.Errorf("sqlmeta: destroy data key of %s: %w", ns, err)
	}
	return k, nil
}

// LiveDataKeys returns a page of live keys; see meta.DataKeyStore.
func (s *Store) LiveDataKeys(ctx context.Context, ns, afterID string, limit int) ([]meta.DataKey, error) {
	var out []meta.DataKey
	err := s.read(ctx, func(q *txq) error {
		query := `SELECT ` + dataKeyColumns + ` FROM data_keys WHERE destroyed_at IS NULL AND id > ?`
		args := []any{afterID}
		if ns != "" {
			query += ` AND namespace = ?`
			args = append(args, ns)
		}
		rows, err := q.query(query+` ORDER BY id LIMIT ?`, append(args, limit)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			k, err := scanDataKey(rows)
			if err != nil {
				return err
			}
			out = append(out, k)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: live data keys: %w", err)
	}
	return out, nil
}

// RewrapDataKey is the compare-and-swap of a master key rotation; see
// meta.DataKeyStore.
func (s *Store) RewrapDataKey(ctx context.Context, r meta.Rewrap) (bool, error) {
	if r.ID == "" || r.From == "" || r.To == "" || len(r.Wrapped) == 0 {
		return false, fmt.Errorf("sqlmeta: rewrap data key: id, both master key ids and the wrapped key are required")
	}
	var swapped bool
	err := s.write(ctx, func(q *txq) error {
		swapped = false // the transaction may run again
		// Only the master key id is compared, not the wrapped bytes: every
		// wrapping by r.To of the same data key is as good as another, and
		// comparing the id is what makes a rewrap that lost the race to
		// another one change nothing (and count nothing). destroyed_at IS
		// NULL keeps a shredded key's tombstone without key material.
		var ns string
		err := q.queryRow(`UPDATE data_keys SET master_key_id = ?, wrapped = ?
			WHERE id = ? AND master_key_id = ? AND destroyed_at IS NULL RETURNING namespace`,
			r.To, base64.StdEncoding.EncodeToString(r.Wrapped), r.ID, r.From).Scan(&ns)
		if errors.Is(err, sql.ErrNoRows) {
			var one int
			err := q.queryRow(`SELECT 1 FROM data_keys WHERE id = ?`, r.ID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("data key %s: %w", r.ID, meta.ErrNotFound)
			}
			return err
		}
		if err != nil {
			return err
		}
		swapped = true
		return q.appendEvents([]meta.Event{{At: r.At, Kind: meta.EventDataKeyRewrapped, Namespace: ns,
			Actor: claimcheck.ActorFrom(q.ctx), Detail: fmt.Sprintf("key %s: master key %s -> %s", r.ID, r.From, r.To)}})
	})
	if err != nil {
		return false, fmt.Errorf("sqlmeta: rewrap data key %s: %w", r.ID, err)
	}
	return swapped, nil
}

// endUploadsOf ends the uploads in progress of ns with its key (ADR
// 0255): a direct or resumable upload receives the payload in clear and
// is sealed under the data key only when it completes, so its bytes, its
// declared digest and its running hash would outlive the shred. Its
// pending claim is finished with reason key_destroyed (the reservation
// goes back, the staging blob is orphaned for collection now, which
// deletes the bytes and aborts the storage's handle), and the digests
// and hash states of every upload of ns are erased, in the shred's
// erasing transaction.
func (q *txq) endUploadsOf(ns string, now time.Time) error {
	rows, err := q.query(`SELECT u.claim_id FROM uploads u JOIN claims c ON c.id = u.claim_id
		WHERE u.namespace = ? AND c.state = 'pending' ORDER BY u.claim_id`, ns)
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	cs := make([]meta.Claim, 0, len(ids))
	reasons := make([]string, 0, len(ids))
	for _, id := range ids {
		c, err := q.loadClaim(id, true)
		if err != nil {
			return err
		}
		if c.State == meta.ClaimPending {
			cs = append(cs, c)
			reasons = append(reasons, meta.ReasonKeyDestroyed)
		}
	}
	if len(cs) > 0 {
		if _, err := q.finish(cs, reasons, now); err != nil {
			return err
		}
	}
	if _, err := q.exec(`UPDATE uploads SET digest = '' WHERE namespace = ? AND digest <> ''`, ns); err != nil {
		return err
	}
	_, err = q.exec(`UPDATE upload_progress SET hash_state = '' WHERE hash_state <> ''
		AND claim_id IN (SELECT claim_id FROM uploads WHERE namespace = ?)`, ns)
	return err
}
