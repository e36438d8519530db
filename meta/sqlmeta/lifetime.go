package sqlmeta

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// Listing and extending claims (meta.LifetimeStore; migrations 0022 and
// 0023; ADR 0100, ADR 0101).
//
// Invariants:
//   - claim_labels holds exactly the labels of claims.labels, for every
//     claim row: written by the transaction that inserts the claim,
//     deleted by the one that prunes it (history.go), never changed in
//     between (labels are immutable).
//   - A listing reads one index range: claim_labels_select for the first
//     label of a selector (the others are checked by primary key per
//     matching row), claims_ns_created for newest first, and
//     claims_ns_expiring for soonest expiry first. TestListUsesIndex
//     checks the plans on both databases.
//   - An extension moves expires_at, and due_at with it when the claim is
//     due for expiry, in one compare-and-swap on the locked row with its
//     audit event; it never lowers either.

// insertLabels writes the label rows of a claim being inserted.
func (q *txq) insertLabels(c meta.Claim) error {
	if len(c.Labels) == 0 {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		if _, err := q.exec(`INSERT INTO claim_labels (claim_id, namespace, label_key, label_value, created_at)
			VALUES (?, ?, ?, ?, ?)`, c.ID, c.Namespace, k, c.Labels[k], c.CreatedAt.UnixNano()); err != nil {
			return fmt.Errorf("label %s: %w", k, err)
		}
	}
	return nil
}

// backfillLabels copies the labels of the claims that existed before
// migration 0022 into claim_labels, a page of claims at a time, inside the
// migration's transaction.
func backfillLabels(q *txq) error {
	after := ""
	for {
		rows, err := q.query(`SELECT id, namespace, labels, created_at FROM claims
			WHERE id > ? AND labels IS NOT NULL ORDER BY id LIMIT 1000`, after)
		if err != nil {
			return err
		}
		var page []meta.Claim
		for rows.Next() {
			var (
				c       meta.Claim
				labels  string
				created int64
			)
			if err := rows.Scan(&c.ID, &c.Namespace, &labels, &created); err != nil {
				rows.Close()
				return err
			}
			if err := json.Unmarshal([]byte(labels), &c.Labels); err != nil {
				rows.Close()
				return fmt.Errorf("claim %s: labels: %w", c.ID, err)
			}
			c.CreatedAt = time.Unix(0, created)
			page = append(page, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, c := range page {
			if err := q.insertLabels(c); err != nil {
				return fmt.Errorf("claim %s: %w", c.ID, err)
			}
		}
		if len(page) < 1000 {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// qualifiedClaimColumns is claimColumns with every column prefixed by
// "claims.", for queries that join claim_labels (which has namespace and
// created_at columns of its own).
var qualifiedClaimColumns = func() string {
	cols := strings.Split(claimColumns, ",")
	for i, c := range cols {
		cols[i] = "claims." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}()

// listQuery builds the listing's statement; see meta.LifetimeStore.
func listQuery(p meta.ListParams) (string, []any) {
	var (
		where []string
		args  []any
		from  string
		order string
	)
	cursor := !p.AfterAt.IsZero() || p.AfterID != ""
	labels := p.Labels
	switch {
	case p.Order == meta.OrderNewest && len(labels) > 0:
		// The selector's first label drives: one range of
		// claim_labels_select, already in (created_at, claim_id) order.
		from = `claim_labels l JOIN claims ON claims.id = l.claim_id`
		where = append(where, `l.namespace = ?`, `l.label_key = ?`, `l.label_value = ?`)
		args = append(args, p.Namespace, labels[0].Key, labels[0].Value)
		if cursor {
			where = append(where, `(l.created_at, l.claim_id) < (?, ?)`)
			args = append(args, p.AfterAt.UnixNano(), p.AfterID)
		}
		labels = labels[1:]
		order = `l.created_at DESC, l.claim_id DESC`
	case p.Order == meta.OrderNewest:
		from = `claims`
		where = append(where, `claims.namespace = ?`)
		args = append(args, p.Namespace)
		if cursor {
			where = append(where, `(claims.created_at, claims.id) < (?, ?)`)
			args = append(args, p.AfterAt.UnixNano(), p.AfterID)
		}
		order = `claims.created_at DESC, claims.id DESC`
	default: // OrderExpiring
		from = `claims`
		// Written exactly as the partial index's predicate (migration
		// 0023), so that SQLite matches it to claims_ns_expiring.
		where = append(where, `claims.namespace = ?`, `claims.state IN ('pending', 'active')`)
		args = append(args, p.Namespace)
		if cursor {
			where = append(where, `(claims.expires_at, claims.id) > (?, ?)`)
			args = append(args, p.AfterAt.UnixNano(), p.AfterID)
		}
		order = `claims.expires_at, claims.id`
	}
	for _, l := range labels {
		where = append(where, `EXISTS (SELECT 1 FROM claim_labels x WHERE x.claim_id = claims.id AND x.label_key = ? AND x.label_value = ?)`)
		args = append(args, l.Key, l.Value)
	}
	if p.State != "" {
		where = append(where, `claims.state = ?`)
		args = append(args, string(p.State))
	}
	if !p.ExpiresAfter.IsZero() {
		where = append(where, `claims.expires_at >= ?`)
		args = append(args, p.ExpiresAfter.UnixNano())
	}
	if !p.ExpiresBefore.IsZero() {
		where = append(where, `claims.expires_at < ?`)
		args = append(args, p.ExpiresBefore.UnixNano())
	}
	args = append(args, p.Limit)
	from += ` JOIN blobs ON blobs.id = claims.blob_id`
	return `SELECT ` + qualifiedClaimColumns + `, blobs.digest, blobs.stored_size, blobs.compression FROM ` + from + ` WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY ` + order + ` LIMIT ?`, args
}

// ListClaims returns a page of a namespace's claims; see
// meta.LifetimeStore.
func (s *Store) ListClaims(ctx context.Context, p meta.ListParams) ([]meta.ListedClaim, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	query, args := listQuery(p)
	var out []meta.ListedClaim
	err := s.read(ctx, func(q *txq) error {
		out = out[:0]
		rows, err := q.query(query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				lc     meta.ListedClaim
				digest sql.NullString
			)
			lc.Claim, err = scanClaim(withExtra{rows, []any{&digest, &lc.StoredSize, &lc.Compression}})
			if err != nil {
				return err
			}
			lc.Digest = digest.String
			out = append(out, lc)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: list claims of %s: %w", p.Namespace, err)
	}
	return out, nil
}

// ExtendClaim moves an active claim's expiry; see meta.LifetimeStore.
func (s *Store) ExtendClaim(ctx context.Context, p meta.ExtendParams) (meta.Claim, error) {
	var out meta.Claim
	err := s.write(ctx, func(q *txq) error {
		c, err := q.loadClaim(p.ID, true)
		if err != nil {
			return err
		}
		if c.State != meta.ClaimActive {
			return fmt.Errorf("claim is %s, not active: %w", c.State, meta.ErrConflict)
		}
		if !c.DueAt.IsZero() && !c.DueAt.After(p.Now) {
			// Past its deadline: finished by whoever comes next unless a
			// hold keeps it. Either way an extension must not bring it
			// back (a hold keeps data, it does not renew it).
			held, err := q.held(c)
			if err != nil {
				return err
			}
			if held {
				return fmt.Errorf("claim was due at %s (%s) and is kept only by a legal hold: %w",
					c.DueAt.Format(time.RFC3339Nano), c.DueReason, meta.ErrHeld)
			}
			return fmt.Errorf("claim was due at %s (%s): %w", c.DueAt.Format(time.RFC3339Nano), c.DueReason, meta.ErrConflict)
		}
		if !p.ExpiresAt.After(c.ExpiresAt) {
			out = c // never shortened: nothing changes, nothing is logged
			return nil
		}
		if !p.NotAfter.IsZero() && p.ExpiresAt.After(p.NotAfter) {
			return &meta.LifetimeError{ID: c.ID, NotAfter: p.NotAfter, Asked: p.ExpiresAt}
		}
		// The due time follows the expiry only when the expiry is what
		// finishes the claim; a read window or the releases' deadline
		// (due_reason read_retention_over, released) is earlier and stays.
		n, err := q.exec(`UPDATE claims SET expires_at = ?,
			due_at = CASE WHEN due_reason = ? THEN ? ELSE due_at END
			WHERE id = ? AND state = 'active' AND expires_at = ?`,
			p.ExpiresAt.UnixNano(), meta.ReasonExpired, p.ExpiresAt.UnixNano(), c.ID, c.ExpiresAt.UnixNano())
		if err != nil {
			return err
		}
		if n == 0 {
			return errRetry // changed under us (cannot happen while locked)
		}
		if err := q.appendEvents([]meta.Event{{At: p.Now, Kind: meta.EventExtended, Namespace: c.Namespace,
			ClaimID: c.ID, BlobID: c.BlobID, Actor: claimcheck.ActorFrom(q.ctx),
			Detail: "expires_at " + c.ExpiresAt.UTC().Format(time.RFC3339) + " -> " + p.ExpiresAt.UTC().Format(time.RFC3339)}}); err != nil {
			return err
		}
		out, err = q.loadClaim(c.ID, false)
		return err
	})
	if err != nil {
		var le *meta.LifetimeError
		if errors.As(err, &le) {
			return meta.Claim{}, err
		}
		return meta.Claim{}, fmt.Errorf("sqlmeta: extend claim %s: %w", p.ID, err)
	}
	return out, nil
}

// withExtra scans a row of the claim columns followed by more columns
// into scanClaim's destinations and then extra.
type withExtra struct {
	row   scanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.row.Scan(append(dest, w.extra...)...) }

// held reports whether a hold keeps claim c (its own, or its
// namespace's).
func (q *txq) held(c meta.Claim) (bool, error) {
	var parked int64
	if err := q.queryRow(`SELECT parked FROM claims WHERE id = ?`, c.ID).Scan(&parked); err != nil {
		return false, err
	}
	if parked != 0 {
		return true, nil
	}
	var one int
	err := q.queryRow(`SELECT 1 FROM namespace_holds WHERE namespace = ?`, c.Namespace).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
