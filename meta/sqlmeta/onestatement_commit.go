package sqlmeta

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// Commit in one statement (PostgreSQL, ADR 0145).
//
// The transaction of q.commit takes five round trips: BEGIN, lock the
// claim, lock the staging blob and the dedup candidate, write, COMMIT;
// and it holds the namespace row, which every put and commit of the
// namespace queues for, across the last one. commitOnce makes the
// common commit, a miss (no blob of these bytes to share), in one
// statement outside a transaction block (Store.once), with no read
// before it. Each of its writes is a compare-and-swap — the claim still
// pending in its staging blob, the staging blob still staging — and a
// guard fails the statement as a whole if one of them found no row;
// PostgreSQL commits it as it ends, so no lock outlives the statement.
//
// It is a miss only if no committed or orphaned blob of the namespace
// has these bytes: the dedup index (at most one such blob per namespace
// and digest) refuses the staging blob's update otherwise, as it does
// in the transaction when a concurrent commit of the same digest got
// there first. The namespace quota is checked in the counter change
// itself (its WHERE): a commit that would exceed it changes nothing.
// Every refusal — a candidate to share or to set aside, a quota, a lost
// swap, an event number taken — sends the commit to the transaction,
// which reads again under locks and decides and answers as before.

// errLostSwap is PostgreSQL's division_by_zero, which the guard of
// commitOnce's statement raises when one of its writes found no row.
const errLostSwap = "22012"

// commitOnce tries p as one statement; done is false when the statement
// did not commit it (and changed nothing): the caller commits in a
// transaction then.
func (s *Store) commitOnce(ctx context.Context, p meta.CommitParams) (res meta.CommitResult, done bool, err error) {
	now := p.Now.UnixNano()
	dueAt, dueReason := p.DueAt, p.DueReason
	var (
		with   []string
		args   []any
		counts []string
	)
	add := func(name, query string, a ...any) {
		with = append(with, name+` AS (`+query+`)`)
		args = append(args, a...)
		counts = append(counts, name)
	}
	// The claim's deadline defaults to its expiry, as in q.commit.
	due, dueArgs := `?`, []any{ts(dueAt)}
	if dueAt.IsZero() {
		due, dueArgs, dueReason = `expires_at`, nil, meta.ReasonExpired
	}
	// A commit that names its namespace (meta.WithNamespace) names it
	// in its writes too.
	in, inArgs := "", []any(nil)
	if ns := meta.NamespaceFrom(ctx); ns != "" {
		in, inArgs = ` AND namespace = ?`, []any{ns}
	}
	add("c", `UPDATE claims SET state = 'active', size = ?, due_at = `+due+`, due_reason = ?
		WHERE id = ? AND state = 'pending' AND blob_id = ?`+in+` RETURNING `+claimColumns,
		slices.Concat([]any{p.Size}, dueArgs, []any{dueReason, p.ClaimID, p.BlobID}, inArgs)...)
	add("u", `UPDATE blobs SET state = 'committed', digest = ?, dedupable = ?, size = ?, stored_size = ?,
		compression = ?, refcount = 1, collect_at = NULL, state_at = ?, version = version + 1
		WHERE id = ? AND state = 'staging'`+in+` AND EXISTS (SELECT 1 FROM c)
		RETURNING `+blobColumns,
		slices.Concat([]any{nullString(p.Digest), boolInt(p.Digest != ""), p.Size, p.StoredSize, p.Compression, now, p.BlobID}, inArgs)...)
	if !auditOff.Load() {
		// An event whose number is taken (rare) fails the guard too:
		// the transaction renumbers it (appendEvents).
		e := createdEvent(meta.Claim{ID: p.ClaimID}, meta.Blob{ID: p.BlobID}, p.Now, claimcheck.ActorFrom(ctx), false)
		add("e", `INSERT INTO events (`+eventColumns+`) SELECT ?, ?, ?, c.namespace, ?, ?, ?, ?, ?, ? FROM c
			ON CONFLICT DO NOTHING RETURNING seq`,
			e.At.UnixNano(), e.At.UnixNano(), e.Kind, e.ClaimID, e.BlobID, e.Detail, e.Actor, e.Reason, e.Tenant)
	}
	// Reservation → usage, from the claim's row, after the blobs (lock
	// order: claim, blobs, namespace). The total only grows when the
	// payload is larger than its reservation; only then is the limit
	// checked, so a lowered quota never strands an upload whose bytes
	// were reserved.
	cols, vals, set, where, clauseArgs := commitCounterClauses(p.Tenant, p.QuotaBytes)
	nsArgs := append([]any{p.Size}, clauseArgs...)
	add("n", `INSERT INTO namespaces (name, used_bytes, reserved_bytes, active_claims, pending_claims`+cols+`)
		SELECT x.namespace, ?, -x.reserved_bytes, 1, -1`+vals+` FROM (SELECT c.namespace, c.reserved_bytes FROM c, u) x
		ON CONFLICT (name) DO UPDATE SET used_bytes = namespaces.used_bytes + excluded.used_bytes,
		reserved_bytes = namespaces.reserved_bytes + excluded.reserved_bytes,
		active_claims = namespaces.active_claims + excluded.active_claims,
		pending_claims = namespaces.pending_claims + excluded.pending_claims`+set+where+`
		RETURNING 1`, nsArgs...)
	guard := make([]string, len(counts))
	for i, name := range counts {
		guard[i] = `(SELECT count(*) FROM ` + name + `)`
	}
	// MATERIALIZED: the guard is computed once, as the outer side of the
	// join, whether or not c and u have a row.
	query := `WITH ` + strings.Join(with, ",\n") + `,
		g AS MATERIALIZED (SELECT 1 / (` + strings.Join(guard, " * ") + `) AS ok)
		SELECT c.*, u.* FROM g LEFT JOIN c ON true LEFT JOIN u ON true`

	err = s.once(ctx, func(q *txq) error {
		var bs blobScan
		var err error
		res.Claim, err = scanClaim(extraColumns{q.queryRow(query, args...), bs.dest()})
		res.Blob = bs.blob()
		return err
	})
	if pgCode(err) == errLostSwap || s.d.isUniqueViolation(err) || s.d.retryable(err) || errors.Is(err, errRetry) {
		return meta.CommitResult{}, false, nil
	}
	if err != nil {
		return meta.CommitResult{}, false, err
	}
	return res, true, nil
}

// commitCounterClauses are the parts of a commit's counter upsert that
// depend on the namespace's tenant and byte limits: the tenant column
// (cols, vals, set) when t names a tenant, and a WHERE that checks the
// limits only where the total grows (so a lowered quota never strands an
// upload whose bytes were reserved): the namespace's quotaBytes, and the
// namespace's allotment of its tenant's byte quota (tenants.go), which a
// commit that outgrows it draws on in a transaction; args are their
// placeholders' values, in that order.
func commitCounterClauses(t meta.TenantQuota, quotaBytes int64) (cols, vals, set, where string, args []any) {
	if t.Tenant != "" {
		cols, vals, set = ", tenant", ", ?", ", tenant = excluded.tenant"
		args = append(args, t.Tenant)
	}
	var limits []string
	if quotaBytes > 0 {
		limits = append(limits, `namespaces.used_bytes + namespaces.reserved_bytes + excluded.used_bytes + excluded.reserved_bytes <= ?`)
		args = append(args, quotaBytes)
	}
	if t.Tenant != "" && t.Bytes > 0 {
		limits = append(limits, `namespaces.allot_key = ?
			AND namespaces.used_bytes + namespaces.reserved_bytes + excluded.used_bytes + excluded.reserved_bytes <= namespaces.allot_bytes`)
		args = append(args, allotKey(t))
	}
	if len(limits) > 0 {
		where = `
		WHERE excluded.used_bytes + excluded.reserved_bytes <= 0
			OR (` + strings.Join(limits, " AND ") + `)`
	}
	return cols, vals, set, where, args
}
