package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// The inserts of CreatePending: the columns of a staging blob, and the
// values of a pending claim (claimColumns).
const (
	blobInsertColumns = `INSERT INTO blobs (id, namespace, digest, size, stored_size, compression, object_key,
		state, refcount, created_at, state_at, collect_at, version) `
	claimValues = `?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, ?, ?, NULL, '', ?`
)

// CreatePending inserts the staging blob and the pending claim of a put
// and reserves its quota (put step 1).
func (s *Store) CreatePending(ctx context.Context, p meta.CreatePendingParams) error {
	c, b := p.Claim, p.Blob
	if err := validatePending(c, b); err != nil {
		return fmt.Errorf("sqlmeta: create pending claim %s: %w", c.ID, err)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = p.Now
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = p.Now
	}
	labels, err := jsonOrNull(c.Labels, len(c.Labels) == 0)
	if err != nil {
		return fmt.Errorf("sqlmeta: create pending claim %s: labels: %w", c.ID, err)
	}
	names, err := jsonOrNull(c.ConsumerNames, len(c.ConsumerNames) == 0)
	if err != nil {
		return fmt.Errorf("sqlmeta: create pending claim %s: consumer names: %w", c.ID, err)
	}
	// The blob row exists before its object is written, so every object
	// the protocol writes can be found from the database.
	blobInsert := blobInsertColumns
	blobValues := `?, ?, NULL, ?, ?, ?, ?, 'staging', 1, ?, ?, ?, 1`
	blobArgs := []any{b.ID, b.Namespace, b.Size, b.StoredSize, b.Compression, b.Key,
		b.CreatedAt.UnixNano(), p.Now.UnixNano(), ts(b.CollectAt)}
	claimInsert := `INSERT INTO claims (` + claimColumns + `) `
	claimArgs := []any{c.ID, c.Namespace, c.BlobID, c.Size, c.ReservedBytes, c.ContentType, labels,
		c.CreatedAt.UnixNano(), ts(c.ExpiresAt), ts(c.DueAt), c.DueReason,
		boolInt(c.DeleteAfterRead), int64(c.RetentionAfterRead), int64(c.GracePeriod),
		int64(max(c.Consumers, 1)), names, textOrNull(c.TraceParent)}
	delta := nsDelta{reserved: c.ReservedBytes, pending: 1}
	once := s.d.writableCTEs && s.d.deferredNamespaceKeys && len(c.Labels) == 0
	if once {
		err = s.createPendingOnce(ctx, p, delta, blobValues, blobArgs, claimArgs)
	}
	if !once || errors.Is(err, errNeedsDraw) {
		blobInsert += `VALUES (` + blobValues + `)`
		claimInsert += `VALUES (` + claimValues + `)`
		err = s.write(ctx, func(q *txq) error {
			// The digest-first check: content to share creates nothing.
			if err := q.refuseForCandidate(c.Namespace, p.UnlessDigest); err != nil {
				return err
			}
			// The counters change in the statement that locks the row
			// (with the writes of with ahead of it in the same
			// statement, if any); a failed check fails the transaction,
			// which undoes it.
			count := func(with string, withArgs []any) error {
				n, err := q.addNamespaceAfter(with, withArgs, c.Namespace, delta, p.Tenant.Tenant)
				if err != nil {
					return err
				}
				if err := pendingQuota(p, n); err != nil {
					return err
				}
				return q.checkTenant(c.Namespace, p.Tenant, c.ReservedBytes, 1, delta)
			}
			// Where the namespace keys are checked at commit (PostgreSQL),
			// the rows go in first and the namespace row, which every put
			// and commit of the namespace queues for, is held from the
			// last statement to the commit. The new rows are this
			// transaction's own: nobody waits on them. Checked at once
			// instead, each insert would lock the namespace row next to
			// the other puts' locks, and the row must exist first.
			if !q.d.deferredNamespaceKeys {
				if err := count("", nil); err != nil {
					return err
				}
			}
			if q.d.writableCTEs && q.d.deferredNamespaceKeys && len(c.Labels) == 0 {
				// One statement for both rows and the counters, still
				// taken last: a tenant quota is summed after it.
				return count(`WITH b AS (`+blobInsert+`), c AS (`+claimInsert+`) `, append(blobArgs, claimArgs...))
			}
			if q.d.writableCTEs {
				// Both rows in one round trip (label rows need the claim's).
				if _, err := q.exec(`WITH b AS (`+blobInsert+`) `+claimInsert, append(blobArgs, claimArgs...)...); err != nil {
					return err
				}
			} else {
				if _, err := q.exec(blobInsert, blobArgs...); err != nil {
					return err
				}
				if _, err := q.exec(claimInsert, claimArgs...); err != nil {
					return err
				}
			}
			if err := q.insertLabels(c); err != nil {
				return err
			}
			if q.d.deferredNamespaceKeys {
				return count("", nil)
			}
			return nil
		})
	}
	if s.d.isUniqueViolation(err) {
		err = fmt.Errorf("id already exists: %w", meta.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlmeta: create pending claim %s: %w", c.ID, err)
	}
	return nil
}

// pendingQuota checks the namespace quota of p against the counters n
// as they were before p's reservation.
func pendingQuota(p meta.CreatePendingParams, n meta.Namespace) error {
	return namespaceQuota(p.Claim.Namespace, p.QuotaBytes, p.QuotaClaims, n, p.Claim.ReservedBytes)
}

// pendingQuotaWhere is the WHERE of a counter change that reserves
// (excluded: the change's own counters, one claim or a group's sum) when
// the namespace has limits: the change is made only if the reservations
// fit. "" when there is no limit.
func pendingQuotaWhere(quotaBytes, quotaClaims int64) (string, []any) {
	var (
		where []string
		args  []any
	)
	if quotaBytes > 0 {
		where = append(where, `namespaces.used_bytes + namespaces.reserved_bytes + excluded.reserved_bytes <= ?`)
		args = append(args, quotaBytes)
	}
	if quotaClaims > 0 {
		where = append(where, `namespaces.active_claims + namespaces.pending_claims + excluded.pending_claims <= ?`)
		args = append(args, quotaClaims)
	}
	return strings.Join(where, ` AND `), args
}

// namespaceQuota refuses one more claim of the given bytes in namespace
// ns, whose counters before it are n, when it would pass a limit (0: no
// limit). Reservations of pending claims count as used: a put refused
// here would otherwise be refused at its commit.
func namespaceQuota(ns string, quotaBytes, quotaClaims int64, n meta.Namespace, bytes int64) error {
	if quotaBytes > 0 && n.UsedBytes+n.ReservedBytes+bytes > quotaBytes {
		return &meta.QuotaError{Namespace: ns, Resource: "bytes", Limit: quotaBytes,
			Used: n.UsedBytes, Reserved: n.ReservedBytes, Requested: bytes}
	}
	if quotaClaims > 0 && n.ActiveClaims+n.PendingClaims+1 > quotaClaims {
		return &meta.QuotaError{Namespace: ns, Resource: "claims", Limit: quotaClaims,
			Used: n.ActiveClaims, Reserved: n.PendingClaims, Requested: 1}
	}
	return nil
}

// createPendingOnce is CreatePending as one statement outside a
// transaction block (Store.once), for PostgreSQL when no label rows are
// needed. A tenant quota admits it within the namespace's allotment only
// (allotmentWhere); errNeedsDraw sends it to the transaction, which
// draws. The blob and claim rows go in first (b, c),
// then the counter change (n), made only if the namespace quota admits
// it (its WHERE) and, with UnlessDigest, only if there is no candidate
// to share; a guard divides by zero when it was not made, which fails
// the statement and takes the rows back out. The statement commits as
// it ends; the namespace row is held only from the counter change to
// that end, never across a round trip nor while the rows are inserted.
func (s *Store) createPendingOnce(ctx context.Context, p meta.CreatePendingParams, delta nsDelta,
	blobValues string, blobArgs, claimArgs []any) error {
	c := p.Claim
	blobInsert := blobInsertColumns + `VALUES (` + blobValues + `) RETURNING id`
	claimInsert := `INSERT INTO claims (` + claimColumns + `) VALUES (` + claimValues + `) RETURNING id`
	// A namespace without a row is admitted by the insert, which has no
	// WHERE: refuse here what no counters could admit.
	if p.QuotaBytes > 0 && c.ReservedBytes > p.QuotaBytes {
		return pendingQuota(p, meta.Namespace{Name: c.Namespace})
	}
	where, whereArgs := pendingQuotaWhere(p.QuotaBytes, p.QuotaClaims)
	// The counter change reads b and c, so both rows are in before it
	// locks the namespace row (lock order: claim, blobs, namespace).
	only, onlyArgs := `EXISTS (SELECT 1 FROM b) AND EXISTS (SELECT 1 FROM c)`, []any(nil)
	if p.UnlessDigest != "" {
		// The digest-first check in the same statement: content to
		// share creates nothing.
		only += ` AND NOT EXISTS (SELECT 1 FROM blobs WHERE ` + candidateOf + `)`
		onlyArgs = []any{c.Namespace, p.UnlessDigest}
	}
	only, onlyArgs, where, whereArgs = allotmentWhere(p.Tenant, c.Namespace, c.ReservedBytes, 1, only, onlyArgs, where, whereArgs)
	count, countArgs := nsChange(c.Namespace, delta, p.Tenant.Tenant, only, onlyArgs, where, whereArgs...)
	query := `WITH b AS (` + blobInsert + `), c AS (` + claimInsert + `), n AS (` + count + `)
		SELECT 1 / (SELECT count(*) FROM n)`
	args := slices.Concat(blobArgs, claimArgs, countArgs)
	single := func(ctx context.Context) error {
		return s.once(ctx, func(q *txq) error {
			var made int
			err := q.queryRow(query, args...).Scan(&made)
			if err == nil {
				return nil
			}
			if pgCode(err) != errLostSwap {
				return err
			}
			// Refused, and nothing was written: by a candidate to share, or
			// by the quota; report which, read again. If neither refuses it
			// now (a claim finished in between), run the statement again.
			if err := q.refuseForCandidate(c.Namespace, p.UnlessDigest); err != nil {
				return err
			}
			n, err := q.namespace(c.Namespace)
			if err != nil {
				return err
			}
			if err := pendingQuota(p, n); err != nil {
				return err
			}
			if needsSum(p.Tenant, c.ReservedBytes, 1) {
				// Perhaps refused by the allotment: the transaction draws.
				return errNeedsDraw
			}
			return errRetry
		})
	}
	// Concurrent puts of the namespace share one statement (grouped_createpending.go).
	return s.createPendingGrouped(&pendingReq{ctx: ctx, p: p, blobValues: blobValues,
		blobArgs: blobArgs, claimArgs: claimArgs, single: single})
}

func validatePending(c meta.Claim, b meta.Blob) error {
	switch {
	case c.ID == "" || b.ID == "":
		return errors.New("claim and blob need ids")
	case c.State != meta.ClaimPending:
		return fmt.Errorf("claim state is %q, want pending", c.State)
	case b.State != meta.BlobStaging:
		return fmt.Errorf("blob state is %q, want staging", b.State)
	case c.BlobID != b.ID:
		return fmt.Errorf("claim points at blob %q, not at the new blob %q", c.BlobID, b.ID)
	case c.Namespace == "" || c.Namespace != b.Namespace:
		return fmt.Errorf("claim namespace %q and blob namespace %q differ", c.Namespace, b.Namespace)
	case c.DueAt.IsZero() || b.CollectAt.IsZero():
		return errors.New("a pending claim and its staging blob need due times")
	case b.CollectAt.Before(c.DueAt):
		return errors.New("the staging blob must not come due before its claim")
	case c.ReservedBytes < 0:
		return errors.New("negative reservation")
	}
	return nil
}

// Commit turns a pending claim active (put step 3); see meta.Store.
func (s *Store) Commit(ctx context.Context, p meta.CommitParams) (meta.CommitResult, error) {
	// A confirmed upload logs two events: the transaction below writes
	// them in one appendEvents call, which keeps their order.
	if s.d.writableCTEs && !p.RepairVerified && !p.Confirmed {
		res, done, err := s.commitGrouped(ctx, p)
		if err != nil {
			return meta.CommitResult{}, fmt.Errorf("sqlmeta: commit claim %s: %w", p.ClaimID, err)
		}
		if done {
			return res, nil
		}
	}
	var res meta.CommitResult
	err := s.write(ctx, func(q *txq) error {
		var err error
		res, err = q.commit(p)
		return err
	})
	if s.d.isUniqueViolation(err) {
		// Only the dedup index can be violated, and write already ran the
		// transaction again maxAttempts times.
		err = fmt.Errorf("concurrent commits of digest %s kept colliding: %w", p.Digest, meta.ErrConflict)
	}
	if err != nil {
		return meta.CommitResult{}, fmt.Errorf("sqlmeta: commit claim %s: %w", p.ClaimID, err)
	}
	return res, nil
}

func (q *txq) commit(p meta.CommitParams) (meta.CommitResult, error) {
	c, err := q.loadClaimRow(p.ClaimID, true) // pending: no releases yet
	if err != nil {
		return meta.CommitResult{}, err
	}
	if c.State != meta.ClaimPending {
		return meta.CommitResult{}, fmt.Errorf("claim is %s, not pending: %w", c.State, meta.ErrConflict)
	}
	if c.BlobID != p.BlobID {
		return meta.CommitResult{}, fmt.Errorf("claim is staged in blob %s, not %s: %w", c.BlobID, p.BlobID, meta.ErrConflict)
	}
	// Locks in the package's order: claim, blobs, then the namespace.
	// The staging blob and the dedup candidate of this (namespace,
	// digest) are read and locked in one statement. From here on no
	// concurrent finish or collection can change the candidate's state.
	// The two rows are locked together in no set order; the staging row
	// is this put's own, so only the candidate is shared and no two
	// commits can wait on each other for them.
	staging, cand, err := q.lockCommitBlobs(p.BlobID, c.Namespace, p.Digest)
	if err != nil {
		return meta.CommitResult{}, err
	}
	if staging.State != meta.BlobStaging {
		return meta.CommitResult{}, fmt.Errorf("blob %s is %s, not staging: %w", staging.ID, staging.State, meta.ErrConflict)
	}
	k := &committing{q: q, p: p, c: c, staging: staging, now: p.Now.UnixNano(),
		// Reservation → usage (countAfter).
		delta:  nsDelta{used: p.Size, reserved: -c.ReservedBytes, active: 1, pending: -1},
		dueAt:  p.DueAt,
		reason: p.DueReason,
	}
	if k.dueAt.IsZero() {
		k.dueAt, k.reason = c.ExpiresAt, meta.ReasonExpired
	}
	var (
		res    meta.CommitResult
		blobID string
	)
	switch {
	case cand != nil && p.Dedup && cand.Damaged():
		res, blobID, err = k.repairCandidate(*cand)
	case cand != nil && p.Dedup && !cand.CreatedAt.Before(p.DedupNotBefore):
		res, blobID, err = k.shareCandidate(*cand)
	default:
		res, blobID, err = k.commitStaging(cand)
	}
	if err != nil {
		return meta.CommitResult{}, err
	}
	return k.activate(res, blobID)
}

// committing is one Commit inside its transaction (txq.commit): the
// pending claim and its staging blob, locked, and what the statement
// that rides with the blob's update (withClaim) did already.
type committing struct {
	q       *txq
	p       meta.CommitParams
	c       meta.Claim // the pending claim
	staging meta.Blob  // its staging blob
	now     int64      // p.Now in Unix nanoseconds
	// The claim's deadline once active: p's, or its expiry.
	dueAt  time.Time
	reason string
	// delta is reservation → usage, applied last (countAfter); n is the
	// namespace's counters after it.
	delta nsDelta
	n     meta.Namespace
	// counted: the counters changed in withClaim's statement; claimDone:
	// so did the claim, and logged events went in with it.
	counted, claimDone bool
	logged             int64
}

// activateClaim turns the claim active, pointing at the blob it keeps.
const activateClaim = `UPDATE claims SET state = 'active', blob_id = ?, size = ?, due_at = ?, due_reason = ?
		WHERE id = ? AND state = 'pending' AND namespace = ?`

// countAfter applies the reservation → usage change, unless withClaim's
// statement did, and checks the quotas. It runs after the blob and
// claim writes: the namespace row, which every put and commit of the
// namespace queues for, is held from that statement to the commit only.
// A failed check fails the transaction, which undoes everything. The
// total only grows when the payload is larger than its reservation;
// only then is the limit checked, so a lowered quota never strands an
// upload whose bytes were reserved.
func (k *committing) countAfter() error {
	p, c := k.p, k.c
	if !k.counted {
		var err error
		if k.n, err = k.q.addNamespace(c.Namespace, k.delta, p.Tenant.Tenant); err != nil {
			return err
		}
	}
	n := k.n
	if grow := p.Size - c.ReservedBytes; p.QuotaBytes > 0 && grow > 0 && n.UsedBytes+n.ReservedBytes+grow > p.QuotaBytes {
		return &meta.QuotaError{Namespace: c.Namespace, Resource: "bytes", Limit: p.QuotaBytes,
			Used: n.UsedBytes, Reserved: n.ReservedBytes, Requested: p.Size}
	}
	return k.q.checkTenant(c.Namespace, k.p.Tenant, p.Size-c.ReservedBytes, 0, k.delta)
}

// withClaim is the blob's update, with what rides along with it where
// the database takes writes in a WITH clause: the claim turns active
// pointing at blobID, its created event is logged, the counters change,
// and also (a discard of an unneeded staging blob) runs: one statement
// while the namespace row is held, then the commit. Elsewhere it is
// update as it is, and activate and countAfter do the rest. An event
// whose sequence number was taken already (ON CONFLICT DO NOTHING
// inserts nothing) is logged again by appendEvents, which renumbers it.
func (k *committing) withClaim(blobID string, dedup bool, also string, alsoArgs []any, update string, args ...any) (string, []any) {
	p, c := k.p, k.c
	if !k.q.d.writableCTEs {
		return update, args
	}
	k.claimDone, k.counted = true, true
	with := []any{blobID, p.Size, ts(k.dueAt), k.reason, c.ID, c.Namespace}
	event := `SELECT 0 AS seq WHERE false`
	if !auditOff.Load() && !p.Confirmed {
		e := createdEvent(c, meta.Blob{ID: blobID}, p.Now, claimcheck.ActorFrom(k.q.ctx), dedup)
		event = `INSERT INTO events (` + eventColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT DO NOTHING RETURNING seq`
		with = append(with, e.At.UnixNano(), e.At.UnixNano(), e.Kind, e.Namespace, e.ClaimID, e.BlobID,
			e.Detail, e.Actor, e.Reason, e.Tenant)
	}
	if also != "" {
		also = `d AS (` + also + `), `
		with = append(with, alsoArgs...)
	}
	count, countArgs := nsChange(c.Namespace, k.delta, p.Tenant.Tenant, "", nil, "")
	return `WITH c AS (` + activateClaim + `), e AS (` + event + `), ` + also + `n AS (` + count + `), u AS (` + update + `)
			SELECT u.*, (SELECT count(*) FROM e), n.* FROM u, n`, slices.Concat(with, countArgs, args)
}

// scanCommitted scans the blob row of the update withClaim built,
// whether its event went in and the counters after the change.
func (k *committing) scanCommitted(row *sql.Row) (meta.Blob, error) {
	if !k.claimDone {
		return scanBlob(row)
	}
	var used, reserved, active, pending int64
	b, err := scanBlob(scanWith{row, []any{&k.logged, &used, &reserved, &active, &pending}})
	k.n = k.delta.before(k.c.Namespace, meta.Namespace{UsedBytes: used, ReservedBytes: reserved, ActiveClaims: active, PendingClaims: pending})
	return b, err
}

// repairCandidate commits onto the damaged candidate cand: never
// attach a claim to a damaged object. The body we have is its content,
// so it can repair it, but only once the caller has read its own object
// back (integrity.go).
func (k *committing) repairCandidate(cand meta.Blob) (meta.CommitResult, string, error) {
	if !k.p.RepairVerified {
		return meta.CommitResult{}, "", fmt.Errorf("blob %s (%s): %w", cand.ID, cand.Damage, meta.ErrDamagedCandidate)
	}
	discarded, err := k.q.repair(k.p, cand, k.staging)
	if err != nil {
		return meta.CommitResult{}, "", err
	}
	return meta.CommitResult{Discarded: discarded, DedupHit: true, Repaired: true,
		FlipBack: cand.State == meta.BlobOrphaned}, cand.ID, nil
}

// shareCandidate is a dedup hit: the claim shares the candidate cand.
// An orphaned one is live again (collect_at cleared, so collection no
// longer sees it).
//
// Our own object is not needed. No claim can reference it: the claim
// that owned it points at the candidate from now on, and it keeps no
// digest, so dedup never finds it. It goes straight to deleting; the
// caller deletes the object now, and collection retries at collect_at if
// that does not happen.
func (k *committing) shareCandidate(cand meta.Blob) (meta.CommitResult, string, error) {
	p, c, staging := k.p, k.c, k.staging
	if p.CheckCandidate && (cand.ID != p.CheckedBlobID || cand.Key != p.CheckedKey) {
		// Never acknowledge a put onto an object nobody checked:
		// the caller checks this one and comes back (ADR 0255).
		return meta.CommitResult{}, "", &meta.CandidateError{Blob: cand}
	}
	retryAt := p.Now.Add(p.DiscardRetry).UnixNano()
	discard := `UPDATE blobs SET state = 'deleting', size = ?, stored_size = ?, compression = ?,
			refcount = 0, collect_at = ?, state_at = ?, version = version + 1
			WHERE id = ? AND state = 'staging' AND namespace = ?`
	discardArgs := []any{p.Size, p.StoredSize, p.Compression, retryAt, k.now, staging.ID, c.Namespace}
	query, args := k.withClaim(cand.ID, true, discard, discardArgs, `UPDATE blobs SET state = 'committed', collect_at = NULL, state_at = ?,
			refcount = refcount + 1, version = version + 1
			WHERE id = ? AND state = ? AND namespace = ?
			RETURNING `+blobColumns,
		k.now, cand.ID, string(cand.State), c.Namespace)
	var res meta.CommitResult
	var err error
	res.Blob, err = k.scanCommitted(k.q.queryRow(query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.CommitResult{}, "", errRetry // changed under us (cannot happen while locked)
	}
	if err != nil {
		return meta.CommitResult{}, "", err
	}
	if !k.claimDone {
		if _, err := k.q.exec(discard, discardArgs...); err != nil {
			return meta.CommitResult{}, "", err
		}
	}
	res.Discarded = staging
	res.Discarded.State, res.Discarded.Size, res.Discarded.StoredSize, res.Discarded.Compression =
		meta.BlobDeleting, p.Size, p.StoredSize, p.Compression
	res.Discarded.Refcount, res.Discarded.CollectAt, res.Discarded.StateAt, res.Discarded.Version =
		0, p.Now.Add(p.DiscardRetry).UTC(), p.Now.UTC(), staging.Version+1
	res.DedupHit = true
	res.FlipBack = cand.State == meta.BlobOrphaned
	return res, cand.ID, nil
}

// commitStaging commits the staging blob itself: nothing is shared.
// cand, if any, may not be reused (dedup off, or too old for the
// lifecycle rule): the new blob, which lives longest, becomes the
// candidate.
func (k *committing) commitStaging(cand *meta.Blob) (meta.CommitResult, string, error) {
	p, c, staging := k.p, k.c, k.staging
	if cand != nil {
		if _, err := k.q.exec(`UPDATE blobs SET dedupable = 0, version = version + 1 WHERE id = ? AND namespace = ?`, cand.ID, c.Namespace); err != nil {
			return meta.CommitResult{}, "", err
		}
	}
	// The staging row is locked and was checked above: the update
	// finds it.
	query, args := k.withClaim(staging.ID, false, "", nil, `UPDATE blobs SET state = 'committed', digest = ?, dedupable = ?, size = ?, stored_size = ?,
			compression = ?, refcount = 1, collect_at = NULL, state_at = ?, version = version + 1
			WHERE id = ? AND state = 'staging' AND namespace = ?
			RETURNING `+blobColumns,
		nullString(p.Digest), boolInt(p.Digest != ""), p.Size, p.StoredSize, p.Compression, k.now, staging.ID, c.Namespace)
	b, err := k.scanCommitted(k.q.queryRow(query, args...))
	if k.q.d.isUniqueViolation(err) {
		// A concurrent commit of the same digest got the index entry
		// first (PostgreSQL); run again, now as a dedup hit.
		return meta.CommitResult{}, "", fmt.Errorf("%w: %w", errRetry, err)
	}
	if err != nil {
		return meta.CommitResult{}, "", err
	}
	return meta.CommitResult{Blob: b}, staging.ID, nil
}

// activate finishes the commit once the blob blobID is the claim's: the
// claim turns active (unless withClaim's statement did), its events are
// logged (those withClaim's statement did not log), and the counters
// change last.
func (k *committing) activate(res meta.CommitResult, blobID string) (meta.CommitResult, error) {
	p, c := k.p, k.c
	if !k.claimDone {
		if _, err := k.q.exec(activateClaim, blobID, p.Size, ts(k.dueAt), k.reason, c.ID, c.Namespace); err != nil {
			return meta.CommitResult{}, err
		}
	}
	c.State, c.BlobID, c.Size, c.DueAt, c.DueReason = meta.ClaimActive, blobID, p.Size, k.dueAt, k.reason
	res.Claim = c
	if res.Repaired {
		// The other branches had the updated row returned.
		var err error
		if res.Blob, err = k.q.loadBlob(blobID, false); err != nil {
			return meta.CommitResult{}, err
		}
	}
	if !k.claimDone || k.logged != 1 {
		events := []meta.Event{createdEvent(c, res.Blob, p.Now, claimcheck.ActorFrom(k.q.ctx), res.DedupHit)}
		if p.Confirmed {
			e := events[0]
			e.Kind, e.Detail = meta.EventConfirmed, ""
			events = append(events, e)
		}
		if err := k.q.appendEvents(events); err != nil {
			return meta.CommitResult{}, err
		}
	}
	return res, k.countAfter()
}

// scanWith scans a row whose leading columns go to a scan function that
// knows only those and whose trailing ones go to extra.
type scanWith struct {
	row   scanner
	extra []any
}

func (s scanWith) Scan(dest ...any) error { return s.row.Scan(append(dest, s.extra...)...) }

// lockCommitBlobs reads and locks the staging blob of a commit and, for
// a non-empty digest, the dedup candidate of (namespace, digest) if there
// is one; cand is nil otherwise. The candidate is never the staging blob:
// a staging blob has no digest.
func (q *txq) lockCommitBlobs(stagingID, namespace, digest string) (staging meta.Blob, cand *meta.Blob, err error) {
	query := `SELECT ` + blobColumns + ` FROM blobs WHERE id = ?`
	args := []any{stagingID}
	if digest != "" {
		query += ` OR (namespace = ? AND digest = ? AND dedupable = 1 AND state IN ('committed', 'orphaned'))`
		args = append(args, namespace, digest)
	}
	rows, err := q.query(query+q.d.lockRow, args...)
	if err != nil {
		return meta.Blob{}, nil, err
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		b, err := scanBlob(rows)
		if err != nil {
			return meta.Blob{}, nil, err
		}
		if b.ID == stagingID {
			staging, found = b, true
		} else {
			cand = &b
		}
	}
	if err := rows.Err(); err != nil {
		return meta.Blob{}, nil, err
	}
	if !found {
		return meta.Blob{}, nil, fmt.Errorf("blob %s: %w", stagingID, meta.ErrNotFound)
	}
	return staging, cand, nil
}

// Claim loads a claim with its releases.
func (s *Store) Claim(ctx context.Context, id string) (meta.Claim, error) {
	var c meta.Claim
	err := s.read(ctx, func(q *txq) error {
		var err error
		c, err = q.loadClaim(id, false)
		return err
	})
	if err != nil {
		return meta.Claim{}, fmt.Errorf("sqlmeta: load claim: %w", err)
	}
	return c, nil
}

// ClaimWithBlob loads a claim with its releases and its blob in one
// statement; see meta.Store.
func (s *Store) ClaimWithBlob(ctx context.Context, id string) (meta.Claim, meta.Blob, bool, error) {
	if !s.d.snapshotReads {
		// Concurrent redeems share a statement (grouped_claimwithblob.go).
		return s.claimWithBlobGrouped(ctx, id)
	}
	return s.claimWithBlob(ctx, id)
}

// claimWithBlob is ClaimWithBlob in a statement of its own. Where reads
// take a snapshot in a transaction (SQLite), the statement that finds the
// claim runs first outside one: a single statement is a snapshot by
// itself, and BEGIN and COMMIT around it were a third of what a redeem's
// read cost. Only when it finds no row does the whole read run again in
// one transaction, whose plain load then answers which is missing.
func (s *Store) claimWithBlob(ctx context.Context, id string) (meta.Claim, meta.Blob, bool, error) {
	var (
		c  meta.Claim
		b  meta.Blob
		ok bool
	)
	// withBlob is the statement; it reports whether it found the rows.
	withBlob := func(q *txq) (bool, error) {
		var released sql.NullString
		c, b, ok = meta.Claim{}, meta.Blob{}, false
		// The claim's columns, its releases, then the blob's: scanClaim
		// takes the first ones, scanBlob the rest.
		in, args := q.inNamespace("namespace", id)
		row := q.queryRow(`SELECT c.*, b.* FROM (SELECT `+claimColumns+`, `+q.d.releasesOf+` AS released
				FROM claims WHERE id = ?`+in+`) c
			JOIN (SELECT `+blobColumns+` FROM blobs) b ON b.id = c.blob_id AND b.namespace = c.namespace`, args...)
		var bs blobScan
		var err error
		c, err = scanClaim(extraColumns{row, append([]any{&released}, bs.dest()...)})
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if c.ReleasedBy, err = releases(id, released); err != nil {
			return false, err
		}
		b, ok = bs.blob(), true
		return true, nil
	}
	if s.d.snapshotReads {
		found, err := withBlob(s.readOne(ctx))
		if err != nil {
			return meta.Claim{}, meta.Blob{}, false, fmt.Errorf("sqlmeta: load claim with blob: %w", err)
		}
		if found {
			return c, b, ok, nil
		}
	}
	err := s.read(ctx, func(q *txq) error {
		found, err := withBlob(q)
		if err != nil || found {
			return err
		}
		// No such claim, or no row of its blob: the plain load answers
		// which.
		c, err = q.loadClaim(id, false)
		return err
	})
	if err != nil {
		return meta.Claim{}, meta.Blob{}, false, fmt.Errorf("sqlmeta: load claim with blob: %w", err)
	}
	return c, b, ok, nil
}

// Blob loads a blob.
func (s *Store) Blob(ctx context.Context, id string) (meta.Blob, error) {
	var b meta.Blob
	err := s.read(ctx, func(q *txq) error {
		var err error
		b, err = q.loadBlob(id, false)
		return err
	})
	if err != nil {
		return meta.Blob{}, fmt.Errorf("sqlmeta: load blob: %w", err)
	}
	return b, nil
}

// Namespace returns a namespace's counters (zero for an unknown name).
func (s *Store) Namespace(ctx context.Context, name string) (meta.Namespace, error) {
	var n meta.Namespace
	err := s.read(ctx, func(q *txq) error {
		var err error
		n, err = q.namespace(name)
		return err
	})
	if err != nil {
		return meta.Namespace{}, fmt.Errorf("sqlmeta: load namespace %s: %w", name, err)
	}
	return n, nil
}

// namespace reads a namespace's counters without locking them (zero for
// an unknown name).
func (q *txq) namespace(name string) (meta.Namespace, error) {
	n := meta.Namespace{Name: name}
	err := q.queryRow(`SELECT used_bytes, reserved_bytes, active_claims, pending_claims, finished_claims FROM namespaces WHERE name = ?`, name).
		Scan(&n.UsedBytes, &n.ReservedBytes, &n.ActiveClaims, &n.PendingClaims, &n.FinishedClaims)
	if errors.Is(err, sql.ErrNoRows) {
		return n, nil
	}
	return n, err
}

// liveAt checks that a claim can still be read or released at now.
func liveAt(c meta.Claim, now time.Time) error {
	if c.State != meta.ClaimActive {
		return fmt.Errorf("claim is %s, not active: %w", c.State, meta.ErrConflict)
	}
	if !c.DueAt.IsZero() && !c.DueAt.After(now) {
		return fmt.Errorf("claim was due at %s (%s): %w", c.DueAt.Format(time.RFC3339Nano), c.DueReason, meta.ErrConflict)
	}
	return nil
}

// lowerDue returns the earlier of the claim's due time and t, with the
// reason that goes with it: a due time only ever moves earlier.
func lowerDue(c meta.Claim, t time.Time, reason string) (time.Time, string) {
	if c.DueAt.IsZero() || t.Before(c.DueAt) {
		return t, reason
	}
	return c.DueAt, c.DueReason
}

// Release records a consumer's release of a live claim; see meta.Store.
func (s *Store) Release(ctx context.Context, id, consumer string, now time.Time) (meta.Claim, error) {
	var c meta.Claim
	err := s.write(ctx, func(q *txq) error {
		var err error
		c, err = q.loadClaim(id, true)
		if err != nil {
			return err
		}
		if err := liveAt(c, now); err != nil {
			return err
		}
		if len(c.ConsumerNames) > 0 && !slices.Contains(c.ConsumerNames, consumer) {
			return nil // does not count; the engine refuses such names before calling
		}
		if slices.Contains(c.ReleasedBy, consumer) {
			return nil // idempotent per name
		}
		if _, err := q.exec(`INSERT INTO claim_releases (claim_id, consumer, released_at, seq, namespace) VALUES (?, ?, ?, ?, ?)`,
			id, consumer, now.UnixNano(), len(c.ReleasedBy)+1, c.Namespace); err != nil {
			return err
		}
		c.ReleasedBy = append(c.ReleasedBy, consumer)
		events := []meta.Event{{At: now, Kind: meta.EventReleased, Namespace: c.Namespace,
			ClaimID: c.ID, BlobID: c.BlobID, Actor: claimcheck.ActorFrom(q.ctx), Detail: consumer}}
		all := len(c.ReleasedBy) >= max(c.Consumers, 1)
		if all {
			// The last expected consumer: what a fan-out producer waits
			// to hear (ADR 0240), logged once, with the release itself.
			events = append(events, meta.Event{At: now, Kind: meta.EventAllReleased, Namespace: c.Namespace,
				ClaimID: c.ID, BlobID: c.BlobID, Actor: claimcheck.ActorFrom(q.ctx), Detail: consumer})
		}
		if err := q.appendEvents(events); err != nil {
			return err
		}
		if !all {
			return nil
		}
		dueAt, reason := lowerDue(c, now.Add(c.RetentionAfterRead), meta.ReasonReleased)
		if dueAt.Equal(c.DueAt) {
			return nil
		}
		c.DueAt, c.DueReason = dueAt, reason
		_, err = q.exec(`UPDATE claims SET due_at = ?, due_reason = ? WHERE id = ? AND state = 'active'`,
			ts(c.DueAt), c.DueReason, id)
		return err
	})
	if err != nil {
		return meta.Claim{}, fmt.Errorf("sqlmeta: release claim %s by %q: %w", id, consumer, err)
	}
	return c, nil
}

// raisePendingDue raises the due time of a pending claim and the collect
// time of its staging blob to dueAt, never lowering either.
func (q *txq) raisePendingDue(claimID, blobID string, dueAt time.Time) error {
	if _, err := q.exec(`UPDATE claims SET due_at = ? WHERE id = ? AND state = 'pending' AND due_at < ?`,
		ts(dueAt), claimID, ts(dueAt)); err != nil {
		return err
	}
	_, err := q.exec(`UPDATE blobs SET collect_at = ? WHERE id = ? AND state = 'staging' AND collect_at < ?`,
		ts(dueAt), blobID, ts(dueAt))
	return err
}

// ExtendPending implements meta.Store.
func (s *Store) ExtendPending(ctx context.Context, claimID, blobID string, dueAt time.Time) error {
	err := s.write(ctx, func(q *txq) error {
		var state string
		if err := q.queryRow(`SELECT state FROM claims WHERE id = ?`, claimID).Scan(&state); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return meta.ErrNotFound
			}
			return err
		}
		if state != string(meta.ClaimPending) {
			return meta.ErrConflict
		}
		return q.raisePendingDue(claimID, blobID, dueAt)
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: extend pending claim %s: %w", claimID, err)
	}
	return nil
}

// refuseForCandidate is the digest-first check of CreatePending
// (CreatePendingParams.UnlessDigest): a *meta.CandidateError carrying the
// blob a put of digest could share in namespace ns, or nil when there is
// none (or digest is empty).
func (q *txq) refuseForCandidate(ns, digest string) error {
	if digest == "" {
		return nil
	}
	cand, err := q.dedupCandidate(ns, digest)
	if err == nil {
		return &meta.CandidateError{Blob: cand}
	}
	if errors.Is(err, meta.ErrNotFound) {
		return nil
	}
	return err
}
