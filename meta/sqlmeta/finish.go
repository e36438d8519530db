package sqlmeta

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

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
		rows, err := q.query(`SELECT `+claimColumns+` FROM claims
			WHERE due_at IS NOT NULL AND due_at <= ? AND state IN ('pending', 'active')
			ORDER BY due_at LIMIT ?`+q.d.skipLocked,
			now.UnixNano(), limit)
		if err != nil {
			return err
		}
		var cs []meta.Claim
		for rows.Next() {
			c, err := scanClaim(rows)
			if err != nil {
				rows.Close()
				return err
			}
			cs = append(cs, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
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
//     usage (active), summed per namespace and written once each;
//   - a pending claim's staging blob is orphaned, due now: the upload
//     never completed, and no other claim can point at a staging blob;
//   - an active claim drops its blob reference; a blob that no pending or
//     active claim points at any more — decided by a query over claims,
//     not by the refcount hint — is orphaned, due after the longest grace
//     period of the claims that just let it go.
//
// It returns the claims it finished, in input order; a claim that is no
// longer in its loaded state (a lost compare-and-swap) is left out.
func (q *txq) finish(cs []meta.Claim, reasons []string, now time.Time) ([]meta.FinishResult, error) {
	nowNS := now.UnixNano()
	type blobRelease struct {
		claims int64
		grace  time.Duration
		last   int // index in res of the last claim that let the blob go
	}
	var (
		res     = make([]meta.FinishResult, 0, len(cs))
		deltas  = make(map[string]nsDelta)
		staging = make(map[string]int) // staging blob id → index in res
		shared  = make(map[string]*blobRelease)
	)
	for i, c := range cs {
		reason := reasons[i]
		if reason == "" {
			reason = meta.ReasonDeleted
		}
		n, err := q.exec(`UPDATE claims SET state = 'deleted', due_at = NULL, deleted_at = ?, delete_reason = ?
			WHERE id = ? AND state = ?`,
			nowNS, reason, c.ID, string(c.State))
		if err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		prev := c.State
		c.State, c.DueAt, c.DeletedAt, c.DeleteReason = meta.ClaimDeleted, time.Time{}, now, reason
		res = append(res, meta.FinishResult{Claim: c, PreviousState: prev})
		d := deltas[c.Namespace]
		switch prev {
		case meta.ClaimPending:
			d.reserved -= c.ReservedBytes
			d.pending--
			staging[c.BlobID] = len(res) - 1
		case meta.ClaimActive:
			d.used -= c.Size
			d.active--
			r := shared[c.BlobID]
			if r == nil {
				r = &blobRelease{}
				shared[c.BlobID] = r
			}
			r.claims++
			r.grace = max(r.grace, c.GracePeriod)
			r.last = len(res) - 1
		}
		deltas[c.Namespace] = d
	}

	// Rows are changed in sorted key order, so that two concurrent pages
	// on PostgreSQL take their locks in the same order.
	for _, name := range slices.Sorted(maps.Keys(deltas)) {
		if err := q.applyNamespace(name, deltas[name]); err != nil {
			return nil, err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(staging)) {
		n, err := q.exec(`UPDATE blobs SET state = 'orphaned', refcount = 0, collect_at = ?, state_at = ?, version = version + 1
			WHERE id = ? AND state = 'staging'`,
			nowNS, nowNS, id)
		if err != nil {
			return nil, err
		}
		res[staging[id]].BlobOrphaned = n == 1
	}

	ids := slices.Sorted(maps.Keys(shared))
	if q.d.lockRow != "" {
		// Lock the blobs before asking whether a live claim still points
		// at them: a concurrent Commit that dedups onto one of them holds
		// its lock until it commits, and the question below is a new
		// statement, so it sees that commit's claim.
		err := chunks(ids, func(part []string) error {
			rows, err := q.query(`SELECT id FROM blobs WHERE id IN (`+placeholders(len(part))+`) ORDER BY id`+q.d.lockRow, anys(part)...)
			if err != nil {
				return err
			}
			return rows.Close()
		})
		if err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		r := shared[id]
		if _, err := q.exec(`UPDATE blobs SET refcount = CASE WHEN refcount > ? THEN refcount - ? ELSE 0 END, version = version + 1
			WHERE id = ?`, r.claims, r.claims, id); err != nil {
			return nil, err
		}
		n, err := q.exec(`UPDATE blobs SET state = 'orphaned', collect_at = ?, state_at = ?, version = version + 1
			WHERE id = ? AND state = 'committed'
			AND NOT EXISTS (SELECT 1 FROM claims WHERE claims.blob_id = ? AND claims.state IN ('pending', 'active'))`,
			now.Add(r.grace).UnixNano(), nowNS, id, id)
		if err != nil {
			return nil, err
		}
		if n == 1 {
			res[r.last].BlobOrphaned = true
		}
	}
	return res, nil
}
