package sqlmeta

import (
	"context"
	"errors"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// Commit in one statement (PostgreSQL, ADR 0145).
//
// The transaction of q.commit takes five round trips: BEGIN, lock the
// claim, lock the staging blob and the dedup candidate, write, COMMIT;
// and it holds the namespace row, which every put and commit of the
// namespace queues for, across the last one. commitOnce does the common
// commits — a miss, or a hit on a sound candidate, with no quota that
// the commit itself must check — in two: one read without locks, then
// one statement outside a transaction block (Store.once) that makes
// every change of the commit, each one a compare-and-swap on what the
// read saw (the claim still pending in its staging blob, each blob row
// at the version read), and fails as a whole if any of them finds its
// row changed. PostgreSQL commits it as it ends, so no lock outlives the
// statement. Anything else, and any lost swap, goes to the transaction,
// which reads again under locks and decides as before.
//
// Why the swaps are enough: every change of a claim or blob row moves
// its state or, for blobs, its version, so a row that passes its swap is
// the row the read saw, and the decision taken on the read still holds.
// A concurrent FinishClaim that orphans the candidate holds the blob row
// and asks whether a live claim points at it; the statement's update of
// that row waits for it and then fails its swap (state and version
// moved), so a hit never lands on a blob being let go. The other order —
// the statement first — is the transaction's: FinishClaim then sees the
// new claim. A concurrent commit of the same digest makes the staging
// blob's update fail on the dedup index, as in the transaction.

// errLostSwap is PostgreSQL's division_by_zero, which the guard of
// commitOnce's statement raises when one of its writes found no row.
const errLostSwap = "22012"

// commitOnce tries p as one statement; done is false when the commit is
// not one it makes, or a row changed since the read: the caller commits
// in a transaction then.
func (s *Store) commitOnce(ctx context.Context, p meta.CommitParams) (res meta.CommitResult, done bool, err error) {
	c, staging, cand, found, err := s.commitRows(ctx, p)
	if err != nil || !found || c.State != meta.ClaimPending || c.BlobID != p.BlobID || staging.State != meta.BlobStaging {
		return res, false, err // the transaction answers why
	}
	if grow := p.Size - c.ReservedBytes; (p.QuotaBytes > 0 && grow > 0) || needsSum(p.Tenant, grow, 0) {
		return res, false, nil // a quota check on the counters after the change
	}
	hit := cand != nil
	if hit && (!p.Dedup || cand.Damaged() || cand.CreatedAt.Before(p.DedupNotBefore)) {
		return res, false, nil // a candidate that is not shared: marked or repaired in the transaction
	}
	now := p.Now.UnixNano()
	dueAt, dueReason := p.DueAt, p.DueReason
	if dueAt.IsZero() {
		dueAt, dueReason = c.ExpiresAt, meta.ReasonExpired
	}
	blobID := staging.ID
	if hit {
		blobID = cand.ID
	}

	// Each write but the claim's runs only if the claim's did (EXISTS
	// c), and the guard g counts them all: a write that found no row
	// divides by zero, which fails the statement and undoes every write
	// in it. The namespace row is written from u, after the blobs (lock
	// order: claim, blobs, namespace).
	var (
		with   []string
		args   []any
		counts = []string{"c", "u"}
	)
	add := func(name, query string, a ...any) {
		with = append(with, name+` AS (`+query+`)`)
		args = append(args, a...)
	}
	add("c", `UPDATE claims SET state = 'active', blob_id = ?, size = ?, due_at = ?, due_reason = ?
		WHERE id = ? AND state = 'pending' AND blob_id = ? AND reserved_bytes = ? RETURNING reserved_bytes`,
		blobID, p.Size, ts(dueAt), dueReason, c.ID, staging.ID, c.ReservedBytes)
	if hit {
		// Share the candidate (an orphaned one is live again), and
		// discard our own staging blob as q.commit does.
		add("u", `UPDATE blobs SET state = 'committed', collect_at = NULL, state_at = ?,
			refcount = refcount + 1, version = version + 1
			WHERE id = ? AND state = ? AND version = ? AND EXISTS (SELECT 1 FROM c)
			RETURNING `+blobColumns,
			now, cand.ID, string(cand.State), cand.Version)
		add("d", `UPDATE blobs SET state = 'deleting', size = ?, stored_size = ?, compression = ?,
			refcount = 0, collect_at = ?, state_at = ?, version = version + 1
			WHERE id = ? AND state = 'staging' AND version = ? AND EXISTS (SELECT 1 FROM c) RETURNING id`,
			p.Size, p.StoredSize, p.Compression, p.Now.Add(p.DiscardRetry).UnixNano(), now, staging.ID, staging.Version)
		counts = append(counts, "d")
	} else {
		add("u", `UPDATE blobs SET state = 'committed', digest = ?, dedupable = ?, size = ?, stored_size = ?,
			compression = ?, refcount = 1, collect_at = NULL, state_at = ?, version = version + 1
			WHERE id = ? AND state = 'staging' AND version = ? AND EXISTS (SELECT 1 FROM c)
			RETURNING `+blobColumns,
			nullString(p.Digest), boolInt(p.Digest != ""), p.Size, p.StoredSize, p.Compression, now, staging.ID, staging.Version)
	}
	if !auditOff.Load() {
		// An event whose number is taken (rare) fails the guard too:
		// the transaction renumbers it (appendEvents).
		e := createdEvent(c, meta.Blob{ID: blobID}, p.Now, claimcheck.ActorFrom(ctx), hit)
		add("e", `INSERT INTO events (`+eventColumns+`) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM c
			ON CONFLICT (seq) DO NOTHING RETURNING seq`,
			e.At.UnixNano(), e.At.UnixNano(), e.Kind, e.Namespace, e.ClaimID, e.BlobID, e.Detail, e.Actor, e.Reason, e.Tenant)
		counts = append(counts, "e")
	}
	cols, vals, set := "", "", ""
	nsArgs := []any{c.Namespace, p.Size}
	if p.Tenant.Tenant != "" {
		cols, vals, set = ", tenant", ", ?", ", tenant = excluded.tenant"
		nsArgs = append(nsArgs, p.Tenant.Tenant)
	}
	add("n", `INSERT INTO namespaces (name, used_bytes, reserved_bytes, active_claims, pending_claims`+cols+`)
		SELECT ?, ?, -x.reserved_bytes, 1, -1`+vals+` FROM (SELECT c.reserved_bytes FROM c, u) x
		ON CONFLICT (name) DO UPDATE SET used_bytes = namespaces.used_bytes + excluded.used_bytes,
		reserved_bytes = namespaces.reserved_bytes + excluded.reserved_bytes,
		active_claims = namespaces.active_claims + excluded.active_claims,
		pending_claims = namespaces.pending_claims + excluded.pending_claims`+set+`
		RETURNING 1`, nsArgs...)
	counts = append(counts, "n")
	guard := make([]string, len(counts))
	for i, name := range counts {
		guard[i] = `(SELECT count(*) FROM ` + name + `)`
	}
	// MATERIALIZED: the guard is computed once, as the outer side of the
	// join, whether or not u has a row.
	query := `WITH ` + strings.Join(with, ",\n") + `, g AS MATERIALIZED (SELECT 1 / (` + strings.Join(guard, " * ") + `) AS ok)
		SELECT u.* FROM g LEFT JOIN u ON true`

	err = s.once(ctx, func(q *txq) error {
		var err error
		res.Blob, err = scanBlob(q.queryRow(query, args...))
		return err
	})
	if pgCode(err) == errLostSwap || s.d.isUniqueViolation(err) || s.d.retryable(err) || errors.Is(err, errRetry) {
		return meta.CommitResult{}, false, nil
	}
	if err != nil {
		return meta.CommitResult{}, false, err
	}
	c.State, c.BlobID, c.Size, c.DueAt, c.DueReason = meta.ClaimActive, blobID, p.Size, dueAt, dueReason
	res.Claim = c
	if hit {
		res.DedupHit = true
		res.FlipBack = cand.State == meta.BlobOrphaned
		res.Discarded = staging
		res.Discarded.State, res.Discarded.Size, res.Discarded.StoredSize, res.Discarded.Compression =
			meta.BlobDeleting, p.Size, p.StoredSize, p.Compression
		res.Discarded.Refcount, res.Discarded.CollectAt, res.Discarded.StateAt, res.Discarded.Version =
			0, p.Now.Add(p.DiscardRetry).UTC(), p.Now.UTC(), staging.Version+1
	}
	return res, true, nil
}

// commitRows reads, without locks and in one statement, the claim p
// commits, its staging blob and the dedup candidate of (namespace,
// p.Digest) if there is one. found is false when the claim or its blob
// has no row.
func (s *Store) commitRows(ctx context.Context, p meta.CommitParams) (c meta.Claim, staging meta.Blob, cand *meta.Blob, found bool, err error) {
	err = s.read(ctx, func(q *txq) error {
		rows, err := q.query(`SELECT c.*, b.* FROM (SELECT `+claimColumns+` FROM claims WHERE id = ?) c,
			(SELECT `+blobColumns+` FROM blobs WHERE id = ? OR (namespace = (SELECT namespace FROM claims WHERE id = ?)
				AND digest = ? AND dedupable = 1 AND state IN ('committed', 'orphaned'))) b`,
			p.ClaimID, p.BlobID, p.ClaimID, p.Digest)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var bs blobScan
			row, err := scanClaim(extraColumns{rows, bs.dest()})
			if err != nil {
				return err
			}
			c = row
			if b := bs.blob(); b.ID == p.BlobID {
				staging, found = b, true
			} else {
				cand = &b
			}
		}
		return rows.Err()
	})
	return c, staging, cand, found, err
}
