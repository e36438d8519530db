package sqlmeta

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// FinishClaim finishes one claim; see meta.Store.
func (s *Store) FinishClaim(ctx context.Context, id string, reason string, now time.Time, onlyIfDue bool) (meta.FinishResult, bool, error) {
	var (
		res  meta.FinishResult
		done bool
	)
	err := s.write(ctx, func(q *txq) error {
		res, done = meta.FinishResult{}, false
		c, err := q.loadClaim(id, true)
		if err != nil {
			return err
		}
		res = meta.FinishResult{Claim: c, PreviousState: c.State}
		if c.State == meta.ClaimDeleted {
			return nil
		}
		why := reason
		if onlyIfDue {
			if c.DueAt.IsZero() || c.DueAt.After(now) {
				return nil
			}
			why = c.DueReason
		}
		rs, err := q.finish([]meta.Claim{c}, []string{why}, now)
		if err != nil {
			return err
		}
		if len(rs) == 1 {
			res, done = rs[0], true
		}
		return nil
	})
	if err != nil {
		return meta.FinishResult{}, false, fmt.Errorf("sqlmeta: finish claim %s: %w", id, err)
	}
	return res, done, nil
}

// FinishDueClaims finishes a page of due claims in one transaction; see
// meta.Store. On PostgreSQL the page is taken with SKIP LOCKED, so
// sweepers in several processes work on different claims.
func (s *Store) FinishDueClaims(ctx context.Context, now time.Time, limit int) ([]meta.FinishResult, error) {
	if limit <= 0 {
		return nil, nil
	}
	var res []meta.FinishResult
	err := s.write(ctx, func(q *txq) error {
		res = nil
		cs, err := queryAll(q, scanClaim, `SELECT `+claimColumns+` FROM claims
			WHERE due_at IS NOT NULL AND due_at <= ? AND parked = 0 AND state IN ('pending', 'active')
			ORDER BY due_at LIMIT ?`+q.d.skipLocked,
			now.UnixNano(), limit)
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			return nil
		}
		ptrs := make([]*meta.Claim, len(cs))
		reasons := make([]string, len(cs))
		for i := range cs {
			ptrs[i] = &cs[i]
			reasons[i] = cs[i].DueReason
		}
		if err := q.loadReleases(ptrs); err != nil {
			return err
		}
		res, err = q.finish(cs, reasons, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: finish due claims: %w", err)
	}
	return res, nil
}

// finish moves the claims (loaded, and locked where the database has row
// locks) to deleted with the given reasons and does everything that goes
// with it, in the caller's transaction:
//
//   - the namespace counters give back the reservation (pending) or the
//     usage (active), summed per namespace and written once each, after
//     the blobs (lock order: claim, blobs, namespace);
//   - a pending claim's staging blob is orphaned, due now: the upload
//     never completed, and no other claim can point at a staging blob;
//   - an active claim drops its blob reference; a blob that no pending or
//     active claim points at any more — decided by a query over claims,
//     not by the refcount hint — is orphaned, due after the longest grace
//     period of the claims that just let it go.
//
// The work is set-based: one statement per group of rows that get the
// same values (usually one group), not one per claim. That is what makes
// a page of a thousand claims cheap on SQLite (fewer statements to
// compile) and on PostgreSQL (fewer round trips).
//
// It returns the claims it finished, in input order; a claim that is no
// longer in its loaded state (a lost compare-and-swap) is left out.
func (q *txq) finish(cs []meta.Claim, reasons []string, now time.Time) ([]meta.FinishResult, error) {
	// Legal holds (holds.go): claims of a held namespace are parked
	// instead, and the UPDATE below re-checks every hold itself.
	if err := q.parkHeldNamespaces(cs); err != nil {
		return nil, err
	}
	f := &finishing{q: q, now: now, nowNS: now.UnixNano()}
	// Claims of one namespace (a FinishClaim, a page of one namespace)
	// are written by statements that name it, so that each goes to one
	// shard of a PostgreSQL distributed by namespace (ADR 0264); the
	// sweeper's pages of many namespaces are statements of their shards.
	f.in, f.inArgs = q.oneNamespace(cs)
	finished, err := f.deleteClaims(cs, reasons)
	if err != nil {
		return nil, err
	}
	f.tally(cs, reasons, finished)
	if err := f.orphanStaging(); err != nil {
		return nil, err
	}
	if err := f.releaseShared(); err != nil {
		return nil, err
	}
	// The counters last (lock order: claim, blobs, namespace), in sorted
	// key order, so that two concurrent pages on PostgreSQL take their
	// locks in the same order; a put's commit queues for the namespace
	// row, so it is held from here to the commit only.
	for _, name := range slices.Sorted(maps.Keys(f.deltas)) {
		if err := q.applyNamespace(name, f.deltas[name]); err != nil {
			return nil, err
		}
	}
	// The audit trail records each finish in the transaction that made it
	// (audit.go), so a finish is never logged without happening or the
	// other way round.
	if err := q.appendEvents(finishEvents(f.res, claimcheck.ActorFrom(q.ctx))); err != nil {
		return nil, err
	}
	return f.res, nil
}

// finishing is one finish inside its transaction (txq.finish): the
// claims it finished and what they let go of.
type finishing struct {
	q     *txq
	now   time.Time
	nowNS int64
	// in and inArgs name the claims' one namespace in every statement
	// (empty for a page of many namespaces).
	in     string
	inArgs []any

	res     []meta.FinishResult // the finished claims, in input order
	deltas  map[string]nsDelta  // namespace → counters given back
	staging map[string]int      // staging blob id → index in res
	shared  map[string]*blobRelease
}

// blobRelease is what the finished active claims of one blob let go.
type blobRelease struct {
	claims int64
	grace  time.Duration
	last   int // index in res of the last claim that let the blob go
}

// deleteClaims moves the claims to deleted, grouped by (reason, state),
// a compare-and-swap on the state each was loaded in; an active claim
// under a hold stays (holdGuard). It returns the ids it moved.
func (f *finishing) deleteClaims(cs []meta.Claim, reasons []string) (map[string]bool, error) {
	type claimGroup struct {
		reason string
		state  meta.ClaimState
	}
	groups := make(map[claimGroup][]string)
	for i, c := range cs {
		if reasons[i] == "" {
			reasons[i] = meta.ReasonDeleted
		}
		k := claimGroup{reasons[i], c.State}
		groups[k] = append(groups[k], c.ID)
	}
	finished := make(map[string]bool, len(cs))
	for k, ids := range groups {
		guard := ""
		if k.state == meta.ClaimActive {
			guard = holdGuard
		}
		err := chunks(ids, func(part []string) error {
			args := slices.Concat([]any{f.nowNS, k.reason, string(k.state)}, anys(part), f.inArgs)
			return f.q.execReturningIDs(finished, finishClaimsStatement(len(part), f.in+guard), args...)
		})
		if err != nil {
			return nil, err
		}
	}
	return finished, nil
}

// tally builds the results of the finished claims and sums what they
// give back: per namespace the reservation (pending) or the usage
// (active), the staging blobs of pending claims, and per blob the active
// claims that let it go.
func (f *finishing) tally(cs []meta.Claim, reasons []string, finished map[string]bool) {
	f.res = make([]meta.FinishResult, 0, len(cs))
	f.deltas = make(map[string]nsDelta)
	f.staging = make(map[string]int)
	f.shared = make(map[string]*blobRelease)
	for i, c := range cs {
		if !finished[c.ID] {
			continue
		}
		prev := c.State
		c.State, c.DueAt, c.DeletedAt, c.DeleteReason = meta.ClaimDeleted, time.Time{}, f.now, reasons[i]
		f.res = append(f.res, meta.FinishResult{Claim: c, PreviousState: prev})
		d := f.deltas[c.Namespace]
		d.finished++ // counted here, once per claim moved to deleted
		switch prev {
		case meta.ClaimPending:
			d.reserved -= c.ReservedBytes
			d.pending--
			f.staging[c.BlobID] = len(f.res) - 1
		case meta.ClaimActive:
			d.used -= c.Size
			d.active--
			r := f.shared[c.BlobID]
			if r == nil {
				r = &blobRelease{}
				f.shared[c.BlobID] = r
			}
			r.claims++
			r.grace = max(r.grace, c.GracePeriod)
			r.last = len(f.res) - 1
		}
		f.deltas[c.Namespace] = d
	}
}

// orphanStaging orphans the staging blobs of the finished pending
// claims, due now: the upload never completed, and no other claim can
// point at a staging blob.
func (f *finishing) orphanStaging() error {
	orphaned := make(map[string]bool)
	err := chunks(slices.Sorted(maps.Keys(f.staging)), func(part []string) error {
		args := slices.Concat([]any{f.nowNS, f.nowNS}, anys(part), f.inArgs)
		return f.q.execReturningIDs(orphaned, `UPDATE blobs SET state = 'orphaned', refcount = 0, collect_at = ?, state_at = ?, version = version + 1
			WHERE state = 'staging' AND id IN (`+placeholders(len(part))+`)`+f.in+` RETURNING id`, args...)
	})
	if err != nil {
		return err
	}
	for id, i := range f.staging {
		f.res[i].BlobOrphaned = orphaned[id]
	}
	return nil
}

// releaseShared drops the references of the finished active claims and
// orphans each blob no pending or active claim points at any more,
// decided by a query over claims, not by the refcount hint.
func (f *finishing) releaseShared() error {
	ids := slices.Sorted(maps.Keys(f.shared))
	if f.q.d.lockRow != "" {
		// Lock the blobs before asking whether a live claim still points
		// at them: a concurrent Commit that dedups onto one of them holds
		// its lock until it commits, and the question below is a new
		// statement, so it sees that commit's claim.
		err := chunks(ids, func(part []string) error {
			rows, err := f.q.query(`SELECT id FROM blobs WHERE id IN (`+placeholders(len(part))+`)`+f.in+` ORDER BY id`+f.q.d.lockRow,
				append(anys(part), f.inArgs...)...)
			if err != nil {
				return err
			}
			return rows.Close()
		})
		if err != nil {
			return err
		}
	}
	orphaned, err := f.orphanUnreferenced(ids)
	if err != nil {
		return err
	}
	if err := f.dropReferences(ids, orphaned); err != nil {
		return err
	}
	for id := range orphaned {
		f.res[f.shared[id].last].BlobOrphaned = true
	}
	return nil
}

// orphanUnreferenced writes each blob of ids that no live claim points
// at any more once: the refcount hint drops by the number of claims that
// let go, and in the same UPDATE a committed blob is orphaned, due after
// the grace period. The rows are grouped by (claims let go, grace
// period), usually one group. One write per blob instead of two halves
// the blob rows a page rewrites: on PostgreSQL each write is a new row
// version with an entry in every index of blobs. It returns the blobs it
// orphaned.
func (f *finishing) orphanUnreferenced(ids []string) (map[string]bool, error) {
	type blobGroup struct {
		claims int64
		grace  time.Duration
	}
	groupsOf := make(map[blobGroup][]string)
	for _, id := range ids {
		r := f.shared[id]
		k := blobGroup{r.claims, r.grace}
		groupsOf[k] = append(groupsOf[k], id)
	}
	orphaned := make(map[string]bool)
	for k, ids := range groupsOf {
		err := chunks(ids, func(part []string) error {
			args := slices.Concat([]any{k.claims, k.claims, f.now.Add(k.grace).UnixNano(), f.nowNS}, anys(part), f.inArgs)
			return f.q.execReturningIDs(orphaned, `UPDATE blobs SET refcount = CASE WHEN refcount > ? THEN refcount - ? ELSE 0 END,
				state = 'orphaned', collect_at = ?, state_at = ?, version = version + 1
				WHERE state = 'committed' AND id IN (`+placeholders(len(part))+`)`+f.in+`
				AND NOT EXISTS (SELECT 1 `+liveClaimsOfBlob+`)
				RETURNING id`, args...)
		})
		if err != nil {
			return nil, err
		}
	}
	return orphaned, nil
}

// dropReferences gives a blob of ids that keeps a live claim (dedup),
// and so was not orphaned, the decrement of its refcount hint alone.
func (f *finishing) dropReferences(ids []string, orphaned map[string]bool) error {
	byCount := make(map[int64][]string)
	for _, id := range ids {
		if !orphaned[id] {
			byCount[f.shared[id].claims] = append(byCount[f.shared[id].claims], id)
		}
	}
	for n, ids := range byCount {
		err := chunks(ids, func(part []string) error {
			args := slices.Concat([]any{n, n}, anys(part), f.inArgs)
			_, err := f.q.exec(`UPDATE blobs SET refcount = CASE WHEN refcount > ? THEN refcount - ? ELSE 0 END, version = version + 1
				WHERE id IN (`+placeholders(len(part))+`)`+f.in, args...)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// finishClaimsStatement moves n claims (their ids the parameters after
// the finish time, the reason and the state they are in) to deleted, with
// the conditions cond after the ids; it returns their ids.
func finishClaimsStatement(n int, cond string) string {
	return `UPDATE claims SET state = 'deleted', due_at = NULL, deleted_at = ?, delete_reason = ?
		WHERE state = ? AND id IN (` + placeholders(n) + `)` + cond + ` RETURNING id`
}

// oneNamespace is the condition that a row is in the namespace of every
// claim of cs, and its argument, when they have one; "" and none when
// they are of several, or the database does not route by namespace
// (dialect.namespaceRouting).
func (q *txq) oneNamespace(cs []meta.Claim) (string, []any) {
	if len(cs) == 0 || !q.d.namespaceRouting {
		return "", nil
	}
	for _, c := range cs[1:] {
		if c.Namespace != cs[0].Namespace {
			return "", nil
		}
	}
	return ` AND namespace = ?`, []any{cs[0].Namespace}
}
