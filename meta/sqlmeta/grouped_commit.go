package sqlmeta

import (
	"context"
	"fmt"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// Group commit of Commit (PostgreSQL, ADR 0160, internal/statement).
//
// commitOnce changes the namespace's counter row too, so concurrent
// commits of a namespace queue on it like CreatePending. Commits that
// come while one runs are made together: for each, the same claim,
// staging blob and created event as commitOnce (claim i in c<i>, blob in
// u<i>, event in e<i>), then one counter change per namespace by their
// sums, with the quota checked on the sums in its WHERE. The guard fails
// the statement as a whole unless every write found its row and every
// namespace its change, so it commits every commit of the group or none;
// then each runs commitOnce and, as without the group, the transaction
// when that declines.

// commitReq is one Commit in a group.
type commitReq struct {
	ctx  context.Context
	p    meta.CommitParams
	res  meta.CommitResult
	done bool
	err  error
}

// commitKey is what the commits of one statement share: the limits of
// the counter change. Commits of other namespaces may share it; each
// namespace gets its own sum.
// Commits that name their namespace (meta.WithNamespace) are grouped
// with commits of that namespace only, and the statement names it.
type commitKey struct {
	tenant     meta.TenantQuota
	quotaBytes int64
	ns         string
}

// commitGrouped is commitOnce, alone or in a group.
func (s *Store) commitGrouped(ctx context.Context, p meta.CommitParams) (meta.CommitResult, bool, error) {
	r := &commitReq{ctx: ctx, p: p}
	s.commitGroups.Do(commitKey{p.Tenant, p.QuotaBytes, meta.NamespaceFrom(ctx)}, r,
		func(r *commitReq) { r.res, r.done, r.err = s.commitOnce(r.ctx, r.p) },
		func(rs []*commitReq) bool { return s.commitGroupOnce(rs) == nil })
	return r.res, r.done, r.err
}

// commitGroupOnce commits every call of batch in one statement, run on
// the first call's context, or none of them (an error). Its text is the
// same for every group size (the commits travel as arrays), so
// PostgreSQL plans it once per connection, not once per size.
func (s *Store) commitGroupOnce(batch []*commitReq) error {
	first := batch[0].p
	n := len(batch)
	var (
		claimIDs, blobIDs, dueReasons, compressions, actors = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		digests                                             = make([]*string, n)
		sizes, storedSizes, stateAts, dedupables            = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		dueAts                                              = make([]*int64, n)
	)
	for i, r := range batch {
		p := r.p
		claimIDs[i], blobIDs[i], sizes[i], storedSizes[i], compressions[i] = p.ClaimID, p.BlobID, p.Size, p.StoredSize, p.Compression
		// The claim's deadline defaults to its expiry, as in q.commit.
		dueReasons[i] = p.DueReason
		if p.DueAt.IsZero() {
			dueReasons[i] = meta.ReasonExpired
		} else {
			dueAts[i] = new(p.DueAt.UnixNano())
		}
		if p.Digest != "" {
			digests[i] = &p.Digest
		}
		dedupables[i] = boolInt(p.Digest != "")
		// The created event's number and time are the commit's time, as
		// in commitOnce (createdEvent).
		stateAts[i] = p.Now.UnixNano()
		actors[i] = claimcheck.ActorFrom(r.ctx)
	}
	events, eventsGuard := ``, ``
	if !auditOff.Load() {
		// An event whose number is taken fails the guard: each commit
		// then goes alone, and the transaction renumbers.
		events = `e AS (INSERT INTO events (` + eventColumns + `)
			SELECT v.state_at, v.state_at, '` + meta.EventCreated + `', c.namespace, v.claim_id, v.blob_id, '', v.actor, '', ''
			FROM v JOIN c ON c.id = v.claim_id
			ON CONFLICT DO NOTHING RETURNING seq),`
		eventsGuard = ` AND (SELECT count(*) FROM e) = ?`
	}
	cols, vals, set, where, nsArgs := commitCounterClauses(first.Tenant, first.QuotaBytes)
	claimsIn, blobsIn, inArgs := "", "", []any(nil)
	if ns := meta.NamespaceFrom(batch[0].ctx); ns != "" {
		claimsIn, blobsIn, inArgs = ` AND claims.namespace = ?`, ` AND blobs.namespace = ?`, []any{ns, ns}
	}
	// Writes in commitOnce's order: claims, blobs, event, then the
	// counters of each namespace (in name order), from the claims' rows;
	// the limit is checked only where the total grows.
	query := `WITH v AS (SELECT * FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]),
			CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]),
			CAST(? AS BIGINT[]), CAST(? AS TEXT[]))
		AS v (claim_id, blob_id, size, due_at, due_reason, digest, dedupable, stored_size, compression, state_at, actor)),
	c AS (UPDATE claims SET state = 'active', size = v.size, due_at = COALESCE(v.due_at, claims.expires_at),
			due_reason = v.due_reason
		FROM v WHERE claims.id = v.claim_id AND claims.state = 'pending' AND claims.blob_id = v.blob_id` + claimsIn + `
		RETURNING ` + qualified("claims", claimColumns) + `),
	u AS (UPDATE blobs SET state = 'committed', digest = v.digest, dedupable = v.dedupable, size = v.size,
			stored_size = v.stored_size, compression = v.compression, refcount = 1, collect_at = NULL,
			state_at = v.state_at, version = blobs.version + 1
		FROM v JOIN c ON c.id = v.claim_id WHERE blobs.id = v.blob_id AND blobs.state = 'staging'` + blobsIn + `
		RETURNING ` + qualified("blobs", blobColumns) + `),
	` + events + `
	x AS (SELECT c.namespace, c.reserved_bytes, v.size FROM v JOIN c ON c.id = v.claim_id JOIN u ON u.id = v.blob_id),
	n AS (INSERT INTO namespaces (name, used_bytes, reserved_bytes, active_claims, pending_claims` + cols + `)
		SELECT x.namespace, sum(x.size), -sum(x.reserved_bytes), count(*), -count(*)` + vals + `
		FROM x GROUP BY x.namespace ORDER BY x.namespace
		ON CONFLICT (name) DO UPDATE SET used_bytes = namespaces.used_bytes + excluded.used_bytes,
		reserved_bytes = namespaces.reserved_bytes + excluded.reserved_bytes,
		active_claims = namespaces.active_claims + excluded.active_claims,
		pending_claims = namespaces.pending_claims + excluded.pending_claims` + set + where + `
		RETURNING 1),
	g AS MATERIALIZED (SELECT 1 / (CASE WHEN (SELECT count(*) FROM c) = ? AND (SELECT count(*) FROM u) = ?` + eventsGuard + `
		AND (SELECT count(*) FROM n) = (SELECT count(DISTINCT namespace) FROM x) THEN 1 ELSE 0 END) AS ok)
	SELECT c.*, u.* FROM g, c JOIN u ON u.id = c.blob_id`
	args := []any{claimIDs, blobIDs, sizes, dueAts, dueReasons, digests, dedupables, storedSizes, compressions, stateAts, actors}
	args = append(args, inArgs...)
	args = append(args, nsArgs...)
	args = append(args, n, n)
	if eventsGuard != "" {
		args = append(args, n)
	}
	results := make(map[string]meta.CommitResult, n)
	err := s.once(batch[0].ctx, func(q *txq) error {
		clear(results)
		rs, err := q.query(query, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var bs blobScan
			c, err := scanClaim(extraColumns{rs, bs.dest()})
			if err != nil {
				return err
			}
			results[c.ID] = meta.CommitResult{Claim: c, Blob: bs.blob()}
		}
		if err := rs.Err(); err != nil {
			return err
		}
		if len(results) != n {
			return fmt.Errorf("%d rows answered for %d commits", len(results), n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: commit %d claims in one statement: %w", n, err)
	}
	for _, r := range batch {
		r.res, r.done, r.err = results[r.p.ClaimID], true, nil
	}
	return nil
}

// qualified prefixes each column of a column list with table.
func qualified(table, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = table + "." + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
