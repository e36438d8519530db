package sqlmeta

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Column lists and scanners for the claims and blobs tables. Every query
// that returns a whole row uses these, so a new column is added in one
// place.

const claimColumns = `id, namespace, blob_id, state, size, reserved_bytes, content_type, labels,
	created_at, expires_at, due_at, due_reason, delete_after_read, retention_after_read, grace_period,
	reads, first_read_at, last_read_at, consumers, consumer_names, deleted_at, delete_reason, trace_parent`

const blobColumns = `id, namespace, digest, size, stored_size, compression, object_key, state, refcount,
	created_at, state_at, collect_at, attempts, last_error, version, dead_at, damaged_at, damage, append_handle`

// liveClaimsOfBlob is the condition "a claim that still holds the blob
// in the outer query's row": pending or active. Written in this one form
// everywhere, so that SQLite matches it to the partial index
// claims_live_blob (migration 0019) and the question costs the blob's live
// claims, not every claim it ever had.
const liveClaimsOfBlob = `FROM claims WHERE claims.blob_id = blobs.id AND claims.state IN ('pending', 'active')`

type scanner interface{ Scan(dest ...any) error }

// queryAll runs query in the transaction and scans every row with scan.
// The rows are closed when it returns, so the transaction can run its
// next statement at once.
func queryAll[T any](q *txq, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanClaim(row scanner) (meta.Claim, error) {
	var (
		c                                 meta.Claim
		state                             string
		labels, consumerNames             sql.NullString
		traceParent                       sql.NullString
		created                           int64
		expires, due, firstRead, lastRead sql.NullInt64
		deleted                           sql.NullInt64
		deleteAfterRead, retention, grace int64
		consumers                         int64
	)
	err := row.Scan(&c.ID, &c.Namespace, &c.BlobID, &state, &c.Size, &c.ReservedBytes, &c.ContentType, &labels,
		&created, &expires, &due, &c.DueReason, &deleteAfterRead, &retention, &grace,
		&c.Reads, &firstRead, &lastRead, &consumers, &consumerNames, &deleted, &c.DeleteReason, &traceParent)
	if err != nil {
		return meta.Claim{}, err
	}
	c.State = meta.ClaimState(state)
	c.CreatedAt = time.Unix(0, created).UTC()
	c.ExpiresAt = fromTS(expires)
	c.DueAt = fromTS(due)
	c.DeleteAfterRead = deleteAfterRead != 0
	c.RetentionAfterRead = time.Duration(retention)
	c.GracePeriod = time.Duration(grace)
	c.FirstReadAt = fromTS(firstRead)
	c.LastReadAt = fromTS(lastRead)
	c.Consumers = int(consumers)
	c.DeletedAt = fromTS(deleted)
	c.TraceParent = traceParent.String
	if labels.Valid {
		if err := json.Unmarshal([]byte(labels.String), &c.Labels); err != nil {
			return meta.Claim{}, fmt.Errorf("claim %s: labels: %w", c.ID, err)
		}
	}
	if consumerNames.Valid {
		if err := json.Unmarshal([]byte(consumerNames.String), &c.ConsumerNames); err != nil {
			return meta.Claim{}, fmt.Errorf("claim %s: consumer names: %w", c.ID, err)
		}
	}
	return c, nil
}

func scanBlob(row scanner) (meta.Blob, error) {
	var bs blobScan
	if err := row.Scan(bs.dest()...); err != nil {
		return meta.Blob{}, err
	}
	return bs.blob(), nil
}

// blobScan holds the columns of a blob row (blobColumns) while they are
// scanned, for a row that carries other columns in front (ClaimWithBlob).
type blobScan struct {
	b                meta.Blob
	digest           sql.NullString
	state            string
	created, stateAt int64
	collect, dead    sql.NullInt64
	damaged          sql.NullInt64
	attempts         int64
}

func (bs *blobScan) dest() []any {
	b := &bs.b
	return []any{&b.ID, &b.Namespace, &bs.digest, &b.Size, &b.StoredSize, &b.Compression, &b.Key, &bs.state, &b.Refcount,
		&bs.created, &bs.stateAt, &bs.collect, &bs.attempts, &b.LastError, &b.Version, &bs.dead, &bs.damaged, &b.Damage, &b.AppendHandle}
}

func (bs *blobScan) blob() meta.Blob {
	b := bs.b
	b.Digest = bs.digest.String
	b.State = meta.BlobState(bs.state)
	b.CreatedAt = time.Unix(0, bs.created).UTC()
	b.StateAt = time.Unix(0, bs.stateAt).UTC()
	b.CollectAt = fromTS(bs.collect)
	b.Attempts = int(bs.attempts)
	b.DeadAt = fromTS(bs.dead)
	b.DamagedAt = fromTS(bs.damaged)
	return b
}

// textOrNull is s, or NULL when empty (a claim created by no sampled
// span has no trace_parent).
func textOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// jsonOrNull encodes v as JSON, or NULL when empty.
func jsonOrNull[T any](v T, empty bool) (any, error) {
	if empty {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// inNamespace is the condition that the column col holds the namespace
// the caller named (meta.WithNamespace), to append to a WHERE, and args
// followed by that namespace; "" and args when the caller named none.
// A lookup by claim id that names its namespace is read from one shard
// of a PostgreSQL distributed by namespace; one that does not asks every
// shard (ADR 0264).
func (q *txq) inNamespace(col string, args ...any) (string, []any) {
	if ns := meta.NamespaceFrom(q.ctx); ns != "" {
		return ` AND ` + col + ` = ?`, append(args, ns)
	}
	return "", args
}

// loadClaim reads one claim with its releases; lock locks the row on
// databases with row locks. The releases come in the same statement, as
// a JSON array (dialect.releasesOf): one round trip, not two.
func (q *txq) loadClaim(id string, lock bool) (meta.Claim, error) {
	in, args := q.inNamespace("namespace", id)
	query := `SELECT ` + claimColumns + `, ` + q.d.releasesOf + ` FROM claims WHERE id = ?` + in
	if lock {
		query += q.d.lockRow
	}
	var released sql.NullString
	c, err := scanClaim(extraColumns{q.queryRow(query, args...), []any{&released}})
	if errors.Is(err, sql.ErrNoRows) {
		return q.loadTombstone(id) // a compacted claim (history.go)
	}
	if err != nil {
		return meta.Claim{}, err
	}
	if c.ReleasedBy, err = releases(id, released); err != nil {
		return meta.Claim{}, err
	}
	return c, nil
}

// releases decodes the releases of claim id from the JSON array of
// dialect.releasesOf.
func releases(id string, released sql.NullString) ([]string, error) {
	var by []string
	if released.Valid {
		if err := json.Unmarshal([]byte(released.String), &by); err != nil {
			return nil, fmt.Errorf("claim %s: releases: %w", id, err)
		}
	}
	if len(by) == 0 {
		return nil, nil // as loadReleases leaves a claim without any
	}
	return by, nil
}

// extraColumns scans a row that has more columns than a scanner like
// scanClaim expects: the extra ones, last in the row, go to extra.
type extraColumns struct {
	row   scanner
	extra []any
}

func (e extraColumns) Scan(dest ...any) error {
	return e.row.Scan(append(dest, e.extra...)...)
}

// loadClaimRow is loadClaim without the releases, for callers that know
// the claim has none (a pending claim: only live claims are released).
func (q *txq) loadClaimRow(id string, lock bool) (meta.Claim, error) {
	in, args := q.inNamespace("namespace", id)
	query := `SELECT ` + claimColumns + ` FROM claims WHERE id = ?` + in
	if lock {
		query += q.d.lockRow
	}
	c, err := scanClaim(q.queryRow(query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return q.loadTombstone(id) // a compacted claim (history.go)
	}
	return c, err
}

// loadReleases fills ReleasedBy of the claims, in release order.
func (q *txq) loadReleases(cs []*meta.Claim) error {
	byID := make(map[string]*meta.Claim, len(cs))
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		byID[c.ID] = c
		ids = append(ids, c.ID)
	}
	return chunks(ids, func(part []string) error {
		rows, err := q.query(`SELECT claim_id, consumer FROM claim_releases WHERE claim_id IN (`+
			placeholders(len(part))+`) ORDER BY claim_id, seq`, anys(part)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, consumer string
			if err := rows.Scan(&id, &consumer); err != nil {
				return err
			}
			c := byID[id]
			c.ReleasedBy = append(c.ReleasedBy, consumer)
		}
		return rows.Err()
	})
}

// loadBlob reads one blob; lock locks the row on databases with row locks.
func (q *txq) loadBlob(id string, lock bool) (meta.Blob, error) {
	query := `SELECT ` + blobColumns + ` FROM blobs WHERE id = ?`
	if lock {
		query += q.d.lockRow
	}
	b, err := scanBlob(q.queryRow(query, id))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.Blob{}, fmt.Errorf("blob %s: %w", id, meta.ErrNotFound)
	}
	return b, err
}

// loadNamespace reads a namespace's counters, locking the row on
// databases with row locks. The row must exist (ensureNamespace).
func (q *txq) loadNamespace(name string) (meta.Namespace, error) {
	n := meta.Namespace{Name: name}
	err := q.queryRow(`SELECT used_bytes, reserved_bytes, active_claims, pending_claims FROM namespaces WHERE name = ?`+q.d.lockRow, name).
		Scan(&n.UsedBytes, &n.ReservedBytes, &n.ActiveClaims, &n.PendingClaims)
	return n, err
}

// ensureNamespace creates a namespace's counter row on first use. The
// upsert syntax is the same on SQLite (3.24+) and PostgreSQL.
func (q *txq) ensureNamespace(name string) error {
	_, err := q.exec(`INSERT INTO namespaces (name) VALUES (?) ON CONFLICT (name) DO NOTHING`, name)
	return err
}

// nsDelta is a change to a namespace's counters, summed over a page of
// claims so that each namespace row is written once per transaction.
type nsDelta struct {
	used, reserved, active, pending int64
	finished                        int64 // claims finished; only applyNamespace writes it
}

// nsChange returns an INSERT of the change d to namespace name's
// counters that adds it to the row where there is one and returns the
// counters after it: one statement where ensureNamespace, loadNamespace
// and applyNamespace take three round trips. The upsert syntax is the
// same on SQLite (3.24+) and PostgreSQL.
//
// A non-empty tenant is recorded as the namespace's tenant in the same
// write (checkTenant's sums count the namespace for it); "" leaves the
// recorded one. A non-empty where is a condition on the existing row
// (columns as namespaces.*, the change as excluded.*) under which the
// change is made; a row that fails it is left as it is and the
// statement returns no row. A non-empty only is a condition (on nothing
// but its arguments and other tables) without which nothing is changed
// at all, a namespace without a row included.
func nsChange(name string, d nsDelta, tenant, only string, onlyArgs []any, where string, whereArgs ...any) (string, []any) {
	cols, vals, set := "", "", ""
	args := []any{name, d.used, d.reserved, d.active, d.pending}
	if tenant != "" {
		cols, vals, set = ", tenant", ", ?", ",\n\ttenant = excluded.tenant"
		args = append(args, tenant)
	}
	values := `VALUES (?, ?, ?, ?, ?` + vals + `)`
	if only != "" {
		values = `SELECT ?, ?, ?, ?, ?` + vals + ` WHERE ` + only
		args = append(args, onlyArgs...)
	}
	if where != "" {
		set += "\n\tWHERE " + where
		args = append(args, whereArgs...)
	}
	return `INSERT INTO namespaces (name, used_bytes, reserved_bytes, active_claims, pending_claims` + cols + `)
	` + values + `
	ON CONFLICT (name) DO UPDATE SET used_bytes = namespaces.used_bytes + excluded.used_bytes,
	reserved_bytes = namespaces.reserved_bytes + excluded.reserved_bytes,
	active_claims = namespaces.active_claims + excluded.active_claims,
	pending_claims = namespaces.pending_claims + excluded.pending_claims` + set + `
	RETURNING used_bytes, reserved_bytes, active_claims, pending_claims`, args
}

// addNamespace applies d to a namespace's counters, creating its row on
// first use, records tenant as its tenant (see nsChange), and returns the
// counters as they were before. Like loadNamespace it holds the row to
// the end of the transaction on databases with row locks, so a quota
// check on the returned counters sees every change committed before; a
// check that fails must fail the transaction, whose rollback takes d
// back.
func (q *txq) addNamespace(name string, d nsDelta, tenant string) (meta.Namespace, error) {
	return q.addNamespaceAfter("", nil, name, d, tenant)
}

// addNamespaceAfter is addNamespace with a WITH clause ahead of the
// upsert (with and its arguments withArgs; "" for none): writes that go to
// the database in the same statement (dialect.writableCTEs).
func (q *txq) addNamespaceAfter(with string, withArgs []any, name string, d nsDelta, tenant string) (meta.Namespace, error) {
	query, args := nsChange(name, d, tenant, "", nil, "")
	var n meta.Namespace
	err := q.queryRow(with+query, append(withArgs, args...)...).
		Scan(&n.UsedBytes, &n.ReservedBytes, &n.ActiveClaims, &n.PendingClaims)
	return d.before(name, n), err
}

// before returns counters n, as d left them, as they were before d.
func (d nsDelta) before(name string, n meta.Namespace) meta.Namespace {
	return meta.Namespace{Name: name, UsedBytes: n.UsedBytes - d.used, ReservedBytes: n.ReservedBytes - d.reserved,
		ActiveClaims: n.ActiveClaims - d.active, PendingClaims: n.PendingClaims - d.pending}
}

func (q *txq) applyNamespace(name string, d nsDelta) error {
	if d == (nsDelta{}) {
		return nil
	}
	_, err := q.exec(`UPDATE namespaces SET used_bytes = used_bytes + ?, reserved_bytes = reserved_bytes + ?,
		active_claims = active_claims + ?, pending_claims = pending_claims + ?,
		finished_claims = finished_claims + ? WHERE name = ?`,
		d.used, d.reserved, d.active, d.pending, d.finished, name)
	return err
}
