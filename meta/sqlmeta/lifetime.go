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
var qualifiedClaimColumns = claimColumnsOf("claims")

// claimColumnsOf is claimColumns with every column prefixed by table and
// a dot.
func claimColumnsOf(table string) string {
	cols := strings.Split(claimColumns, ",")
	for i, c := range cols {
		cols[i] = table + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// listRange is the index range a listing reads, in its order: the
// claim_labels index of the selector's first label, or the claims index
// of the order, from the cursor on. at and id name its sort key and claim
// id columns.
type listRange struct {
	from, at, id, order string
	where               []string
	args                []any
}

// rangeOf is the range of p's listing.
func rangeOf(p meta.ListParams) listRange {
	cursor := !p.AfterAt.IsZero() || p.AfterID != ""
	var r listRange
	switch {
	case p.Order == meta.OrderNewest && len(p.Labels) > 0:
		// The selector's first label drives: one range of
		// claim_labels_select, already in (created_at, claim_id) order.
		r = listRange{from: `claim_labels l`, at: `l.created_at`, id: `l.claim_id`, order: `l.created_at DESC, l.claim_id DESC`,
			where: []string{`l.namespace = ?`, `l.label_key = ?`, `l.label_value = ?`},
			args:  []any{p.Namespace, p.Labels[0].Key, p.Labels[0].Value}}
		if cursor {
			r.where = append(r.where, `(l.created_at, l.claim_id) < (?, ?)`)
		}
	case p.Order == meta.OrderNewest:
		r = listRange{from: `claims`, at: `claims.created_at`, id: `claims.id`, order: `claims.created_at DESC, claims.id DESC`,
			where: []string{`claims.namespace = ?`}, args: []any{p.Namespace}}
		if cursor {
			r.where = append(r.where, `(claims.created_at, claims.id) < (?, ?)`)
		}
	default: // OrderExpiring
		// Written exactly as the partial index's predicate (migration
		// 0023), so that SQLite matches it to claims_ns_expiring.
		r = listRange{from: `claims`, at: `claims.expires_at`, id: `claims.id`, order: `claims.expires_at, claims.id`,
			where: []string{`claims.namespace = ?`, `claims.state IN ('pending', 'active')`}, args: []any{p.Namespace}}
		// The expiry window bounds this range's own key: the index stops
		// at its end, rather than a filter reading past it.
		if !p.ExpiresAfter.IsZero() {
			r.where = append(r.where, `claims.expires_at >= ?`)
			r.args = append(r.args, p.ExpiresAfter.UnixNano())
		}
		if !p.ExpiresBefore.IsZero() {
			r.where = append(r.where, `claims.expires_at < ?`)
			r.args = append(r.args, p.ExpiresBefore.UnixNano())
		}
		if cursor {
			r.where = append(r.where, `(claims.expires_at, claims.id) > (?, ?)`)
		}
	}
	if cursor {
		r.args = append(r.args, p.AfterAt.UnixNano(), p.AfterID)
	}
	return r
}

// listFilters are the conditions of p the range's index does not hold,
// checked on each claim row of the range, which t names (claims, or the
// window's subquery).
func listFilters(p meta.ListParams, t string) ([]string, []any) {
	var (
		where []string
		args  []any
	)
	labels := p.Labels
	if p.Order == meta.OrderNewest && len(labels) > 0 {
		labels = labels[1:] // the range's
	}
	for _, l := range labels {
		where = append(where, `EXISTS (SELECT 1 FROM claim_labels x WHERE x.claim_id = `+t+`.id AND x.label_key = ? AND x.label_value = ?)`)
		args = append(args, l.Key, l.Value)
	}
	if p.State != "" {
		where = append(where, t+`.state = ?`)
		args = append(args, string(p.State))
	}
	if p.Order == meta.OrderExpiring {
		return where, args // the expiry window is the range's (rangeOf)
	}
	if !p.ExpiresAfter.IsZero() {
		where = append(where, t+`.expires_at >= ?`)
		args = append(args, p.ExpiresAfter.UnixNano())
	}
	if !p.ExpiresBefore.IsZero() {
		where = append(where, t+`.expires_at < ?`)
		args = append(args, p.ExpiresBefore.UnixNano())
	}
	return where, args
}

// listQuery builds the listing's statement; see meta.LifetimeStore.
// Without a window, or without a filter for one to bound, it is one
// walk of the range that stops at the limit. With both, the range is
// first cut to its window's claim rows in a subquery (w), and the filters
// are checked on those only: neither database pushes a condition into a
// subquery with a LIMIT, so none can turn the window into a scan of
// claims.
func listQuery(p meta.ListParams) (string, []any) {
	r := rangeOf(p)
	from := r.from
	if r.from != `claims` {
		from += ` JOIN claims ON claims.id = ` + r.id
	}
	if filters, fargs := listFilters(p, "claims"); p.Window <= 0 || len(filters) == 0 {
		where := append(slices.Clone(r.where), filters...)
		args := append(append(slices.Clone(r.args), fargs...), p.Limit)
		return `SELECT ` + qualifiedClaimColumns + `, blobs.digest, blobs.stored_size, blobs.compression FROM ` + from +
			` JOIN blobs ON blobs.id = claims.blob_id WHERE ` + strings.Join(where, " AND ") + ` ORDER BY ` + r.order + ` LIMIT ?`, args
	}
	filters, fargs := listFilters(p, "w")
	window := `(SELECT claims.* FROM ` + from + ` WHERE ` + strings.Join(r.where, " AND ") +
		` ORDER BY ` + r.order + ` LIMIT ?) AS w`
	order := `w.created_at DESC, w.id DESC` // a label's created_at is its claim's
	if p.Order == meta.OrderExpiring {
		order = `w.expires_at, w.id`
	}
	args := append(append(append(slices.Clone(r.args), p.Window), fargs...), p.Limit)
	return `SELECT ` + claimColumnsOf("w") + `, blobs.digest, blobs.stored_size, blobs.compression FROM ` + window +
		` JOIN blobs ON blobs.id = w.blob_id WHERE ` + strings.Join(filters, " AND ") + ` ORDER BY ` + order + ` LIMIT ?`, args
}

// windowEnd builds the statement of the last row of p's window (its sort
// key and id), which exists only when the range has Window rows.
func windowEnd(p meta.ListParams) (string, []any) {
	r := rangeOf(p)
	return `SELECT ` + r.at + `, ` + r.id + ` FROM ` + r.from + ` WHERE ` + strings.Join(r.where, " AND ") +
		` ORDER BY ` + r.order + ` LIMIT 1 OFFSET ?`, append(slices.Clone(r.args), p.Window-1)
}

// ListClaims returns a page of a namespace's claims; see
// meta.LifetimeStore.
func (s *Store) ListClaims(ctx context.Context, p meta.ListParams) (meta.ListPage, error) {
	if p.Limit <= 0 {
		return meta.ListPage{}, nil
	}
	query, args := listQuery(p)
	var out meta.ListPage
	err := s.read(ctx, func(q *txq) error {
		out = meta.ListPage{}
		if err := q.listRows(query, args, &out); err != nil {
			return err
		}
		if len(out.Claims) >= p.Limit || p.Window <= 0 {
			return nil
		}
		if where, _ := listFilters(p, "claims"); len(where) == 0 {
			return nil // the range itself ended: nothing was left unread
		}
		endQuery, endArgs := windowEnd(p)
		var at int64
		err := q.queryRow(endQuery, endArgs...).Scan(&at, &out.ResumeID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // the range ended inside the window
		}
		out.ResumeAt = time.Unix(0, at)
		return err
	})
	if err != nil {
		return meta.ListPage{}, fmt.Errorf("sqlmeta: list claims of %s: %w", p.Namespace, err)
	}
	return out, nil
}

// listRows appends the claims of the listing's statement to page.
func (q *txq) listRows(query string, args []any, page *meta.ListPage) error {
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
		page.Claims = append(page.Claims, lc)
	}
	return rows.Err()
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
