package sqlmeta

import (
	"context"
	"fmt"

	"github.com/claimcheck/claimcheck/meta"
)

// Group commit of CreatePending (PostgreSQL, ADR 0160, internal/statement).
//
// Every put of a namespace changes the namespace's counter row in its
// CreatePending statement, so concurrent puts of one namespace run those
// statements one after another however many connections there are, and
// each pays a statement's whole fixed cost (bind, executor start, commit,
// a round trip) for one row of each table. Puts that come while a
// CreatePending of their namespace runs are written together: every
// staging blob row, every pending claim row, and one counter change by
// their sum. The quota is checked on that sum in the counter change's
// WHERE, as for one put, so the namespace never goes over its limit; the
// statement commits all the rows or none (it is one statement outside a
// transaction block), so nothing is reserved that no claim row carries.
// When the statement changes nothing (the sum does not fit, a put's
// digest has a blob to share) or fails, each put runs its own statement
// and gets its own answer.

// pendingReq is one CreatePending in a group.
type pendingReq struct {
	ctx        context.Context
	p          meta.CreatePendingParams
	blobValues string
	blobArgs   []any
	claimArgs  []any
	single     func(context.Context) error // the put's own statement
	err        error
}

// pendingKey is what the puts of one statement share: the namespace row
// and the limits checked on it.
type pendingKey struct {
	namespace               string
	tenant                  meta.TenantQuota
	quotaBytes, quotaClaims int64
}

// createPendingGrouped runs r, alone or in a group.
func (s *Store) createPendingGrouped(r *pendingReq) error {
	key := pendingKey{r.p.Claim.Namespace, r.p.Tenant, r.p.QuotaBytes, r.p.QuotaClaims}
	s.pendingGroups.Do(key, r,
		func(r *pendingReq) { r.err = r.single(r.ctx) },
		func(rs []*pendingReq) bool { return s.pendingGroupOnce(rs) == nil })
	return r.err
}

// pendingGroupOnce is the group's statement: the rows of every put, then
// one counter change by their sum, made only if the quota admits the sum
// and no put has a blob to share; a guard fails the statement (and takes
// the rows back out) when it was not made. Its text is the same for every
// group size (the rows travel as arrays), so PostgreSQL plans it once per
// connection, not once per size. It runs on the first put's context; an
// error sends every put to its own statement.
func (s *Store) pendingGroupOnce(batch []*pendingReq) error {
	first := batch[0].p
	blobRows := make([][]any, len(batch))
	claimRows := make([][]any, len(batch))
	var (
		reserved int64
		digests  []string
	)
	for i, r := range batch {
		blobRows[i], claimRows[i] = r.blobArgs, r.claimArgs
		reserved += r.p.Claim.ReservedBytes
		if r.p.UnlessDigest != "" {
			digests = append(digests, r.p.UnlessDigest)
		}
	}
	// The argument lists of CreatePending's own statement, column by
	// column (blobValues and claimValues give their order).
	args := []any{
		column[string](blobRows, 0), column[string](blobRows, 1), column[int64](blobRows, 2),
		column[int64](blobRows, 3), column[string](blobRows, 4), column[string](blobRows, 5),
		column[int64](blobRows, 6), column[int64](blobRows, 7), column[int64](blobRows, 8),
		column[string](claimRows, 0), column[string](claimRows, 1), column[string](claimRows, 2),
		column[int64](claimRows, 3), column[int64](claimRows, 4), column[string](claimRows, 5),
		column[string](claimRows, 6), column[int64](claimRows, 7), column[int64](claimRows, 8),
		column[int64](claimRows, 9), column[string](claimRows, 10), column[int64](claimRows, 11),
		column[int64](claimRows, 12), column[int64](claimRows, 13), column[int64](claimRows, 14),
		column[string](claimRows, 15), column[string](claimRows, 16),
	}
	// A namespace without a row yet is admitted by the insert, which has
	// no WHERE (as in createPendingOnce): a sum no counters could admit
	// goes to the puts' own statements, which refuse what does not fit.
	if (first.QuotaBytes > 0 && reserved > first.QuotaBytes) ||
		(first.QuotaClaims > 0 && int64(len(batch)) > first.QuotaClaims) {
		return fmt.Errorf("sqlmeta: %d pending claims of %d bytes exceed the quota of namespace %s together",
			len(batch), reserved, first.Claim.Namespace)
	}
	only := `(SELECT count(*) FROM b) = ? AND (SELECT count(*) FROM c) = ?
		AND NOT EXISTS (SELECT 1 FROM blobs WHERE namespace = ? AND digest = ANY(CAST(? AS TEXT[]))
			AND dedupable = 1 AND state IN ('committed', 'orphaned'))`
	onlyArgs := []any{len(batch), len(batch), first.Claim.Namespace, digests}
	where, whereArgs := pendingQuotaWhere(first.QuotaBytes, first.QuotaClaims)
	only, onlyArgs, where, whereArgs = allotmentWhere(first.Tenant, first.Claim.Namespace, reserved, int64(len(batch)),
		only, onlyArgs, where, whereArgs)
	delta := nsDelta{reserved: reserved, pending: int64(len(batch))}
	count, countArgs := nsChange(first.Claim.Namespace, delta, first.Tenant.Tenant, only, onlyArgs,
		where, whereArgs...)
	query := `WITH b AS (` + blobInsertColumns + `
		SELECT t.id, t.namespace, NULL, t.size, t.stored_size, t.compression, t.object_key, 'staging', 1,
			t.created_at, t.state_at, t.collect_at, 1
		FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]),
			CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]))
			AS t (id, namespace, size, stored_size, compression, object_key, created_at, state_at, collect_at)
		RETURNING id),
	c AS (INSERT INTO claims (` + claimColumns + `)
		SELECT t.id, t.namespace, t.blob_id, 'pending', t.size, t.reserved_bytes, t.content_type, t.labels,
			t.created_at, t.expires_at, t.due_at, t.due_reason, t.delete_after_read, t.retention_after_read, t.grace_period,
			0, NULL, NULL, t.consumers, t.consumer_names, NULL, '', t.trace_parent
		FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]),
			CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]),
			CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]),
			CAST(? AS TEXT[]), CAST(? AS TEXT[]))
			AS t (id, namespace, blob_id, size, reserved_bytes, content_type, labels, created_at, expires_at, due_at,
				due_reason, delete_after_read, retention_after_read, grace_period, consumers, consumer_names, trace_parent)
		RETURNING id),
	n AS (` + count + `)
	SELECT 1 / (SELECT count(*) FROM n)`
	args = append(args, countArgs...)
	err := s.once(batch[0].ctx, func(q *txq) error {
		var made int
		return q.queryRow(query, args...).Scan(&made)
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: create %d pending claims in one statement: %w", len(batch), err)
	}
	return nil
}

// column gathers argument i of every row into one array argument; an
// argument that is not a T (a nil for NULL) becomes a NULL element.
func column[T any](rows [][]any, i int) []*T {
	out := make([]*T, len(rows))
	for k, r := range rows {
		if v, ok := r[i].(T); ok {
			out[k] = &v
		}
	}
	return out
}
