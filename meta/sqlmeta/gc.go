package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// CommitExisting is the digest-first put; see meta.Store. It takes the
// same locks in the same order as Commit (namespace, then the candidate
// blob), and only the candidate's own row decides: a blob in deleting is
// outside the dedup index and never found here.
//
// A hit is one write transaction of few statements (ADR 0140): the
// namespace charge and its quota check in one upsert, the candidate read
// and locked by id, its reference taken with a compare-and-swap on the
// state just read, the claim and its created event inserted; nothing is
// read back. On SQLite the reference is taken by the statement that
// finds the candidate (commitExistingReferenceFirst, ADR 0170).
// Everything that refuses the hit (a miss, a quota) returns an error
// from the transaction, so its rollback takes the charge back and a
// miss changes nothing.
func (s *Store) CommitExisting(ctx context.Context, p meta.CommitExistingParams) (meta.CommitResult, bool, error) {
	c := p.Claim
	if c.ID == "" || c.Namespace == "" || p.Digest == "" {
		return meta.CommitResult{}, false, fmt.Errorf("sqlmeta: commit existing: claim id, namespace and digest are required")
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = p.Now
	}
	if p.BlobID == "" && s.d.snapshotReads {
		// The digest-first question of content the namespace holds no
		// candidate for, as most puts' content: one read on the read
		// pool answers it, without the writer lock (SQLite's one) and a
		// transaction that would only roll back. The transaction looks
		// the candidate up again under the lock; a candidate committed
		// after this read is one the put would have missed by arriving a
		// moment earlier, and its upload's commit shares it then.
		var one int
		err := s.readOne(ctx).queryRow(`SELECT 1 FROM blobs WHERE `+candidateOf+` LIMIT 1`, c.Namespace, p.Digest).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return meta.CommitResult{}, false, nil
		}
		// Otherwise the transaction answers, errors too.
	}
	var res meta.CommitResult
	err := s.write(ctx, func(q *txq) error {
		var err error
		res, err = q.commitExisting(p, c)
		return err
	})
	if errors.Is(err, errNoHit) {
		return meta.CommitResult{}, false, nil
	}
	if s.d.isUniqueViolation(err) {
		err = fmt.Errorf("id already exists: %w", meta.ErrConflict)
	}
	if err != nil {
		return meta.CommitResult{}, false, fmt.Errorf("sqlmeta: commit existing claim %s: %w", c.ID, err)
	}
	return res, true, nil
}

// errNoHit ends a CommitExisting transaction that found nothing to
// share: the rollback undoes the namespace charge already applied.
var errNoHit = errors.New("sqlmeta: no dedup hit")

func (q *txq) commitExisting(p meta.CommitExistingParams, c meta.Claim) (meta.CommitResult, error) {
	labels, err := jsonOrNull(c.Labels, len(c.Labels) == 0)
	if err != nil {
		return meta.CommitResult{}, fmt.Errorf("labels: %w", err)
	}
	names, err := jsonOrNull(c.ConsumerNames, len(c.ConsumerNames) == 0)
	if err != nil {
		return meta.CommitResult{}, fmt.Errorf("consumer names: %w", err)
	}
	if !q.d.writableCTEs {
		return q.commitExistingReferenceFirst(p, c, labels, names)
	}
	cand, err := q.lockCandidate(p, c)
	if err != nil {
		return meta.CommitResult{}, err
	}
	// The charge, in one statement that locks the namespace row, records
	// the tenant and returns the counters as they were: the quota is
	// checked against every change committed before, and counted once,
	// here.
	delta := nsDelta{used: c.Size, active: 1}
	n, err := q.addNamespace(c.Namespace, delta, p.Tenant.Tenant)
	if err != nil {
		return meta.CommitResult{}, err
	}
	if err := checkNamespaceQuota(p, c, n); err != nil {
		return meta.CommitResult{}, err
	}
	if err := q.checkTenant(c.Namespace, p.Tenant, c.Size, 1, delta); err != nil {
		return meta.CommitResult{}, err
	}
	b, err := q.referenceExisting(p, c, cand, labels, names)
	if err != nil {
		return meta.CommitResult{}, err
	}
	return meta.CommitResult{Claim: insertedClaim(c, cand.ID), Blob: b, DedupHit: true,
		FlipBack: cand.State == meta.BlobOrphaned}, nil
}

// lockCandidate reads and locks the candidate of a digest-first hit:
// from here on no finish, collection or damage mark can change it
// before the transaction ends, so the reference taken afterwards is on
// a blob that is live, healthy and owns the object the caller checked.
// Lock order (claim, blobs, namespace, tenant; sqlmeta.go): where rows
// are locked (PostgreSQL) the candidate is locked first, by id when the
// caller checked one, else by its digest; SQLite's transaction holds the
// database's one writer lock from its start. Either way one statement.
// No candidate, or one that may not be shared, is errNoHit.
func (q *txq) lockCandidate(p meta.CommitExistingParams, c meta.Claim) (meta.Blob, error) {
	var (
		dedupable int64
		row       *sql.Row
	)
	if p.BlobID != "" {
		row = q.queryRow(`SELECT `+blobColumns+`, dedupable FROM blobs WHERE id = ?`+q.d.lockRow, p.BlobID)
	} else {
		row = q.queryRow(`SELECT `+blobColumns+`, dedupable FROM blobs
			WHERE namespace = ? AND digest = ? AND dedupable = 1 AND state IN ('committed', 'orphaned')`+q.d.lockRow,
			c.Namespace, p.Digest)
	}
	cand, err := scanBlob(scanWith{row, []any{&dedupable}})
	if errors.Is(err, sql.ErrNoRows) {
		return meta.Blob{}, errNoHit
	}
	if err != nil {
		return meta.Blob{}, err
	}
	if !shareable(cand, dedupable == 1, p) || (p.Check != nil && !p.Check(q.callerCtx(), cand)) {
		return meta.Blob{}, errNoHit
	}
	return cand, nil
}

// referenceExisting takes the reference on the locked candidate cand,
// a compare-and-swap on the state read under the lock, and inserts the
// active claim c and its created event. A committed blob only counts one
// more reference: refcount and version are in no index, so the update
// writes the row's page and nothing else. An orphaned one is live again
// (collect_at cleared, so collection no longer sees it). It returns the
// blob as updated.
func (q *txq) referenceExisting(p meta.CommitExistingParams, c meta.Claim, cand meta.Blob, labels, names any) (meta.Blob, error) {
	update := `UPDATE blobs SET refcount = refcount + 1, version = version + 1
		WHERE id = ? AND state = 'committed'
		RETURNING ` + blobColumns
	args := []any{cand.ID}
	if cand.State == meta.BlobOrphaned {
		update = `UPDATE blobs SET state = 'committed', collect_at = NULL, state_at = ?,
			refcount = refcount + 1, version = version + 1
			WHERE id = ? AND state = 'orphaned'
			RETURNING ` + blobColumns
		args = []any{p.Now.UnixNano(), cand.ID}
	}
	insertClaim := `INSERT INTO claims (` + claimColumns + `)
		VALUES (?, ?, ?, 'active', ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, ?, ?, NULL, '', ?)`
	claimArgs := []any{c.ID, c.Namespace, cand.ID, c.Size, c.ContentType, labels,
		c.CreatedAt.UnixNano(), ts(c.ExpiresAt), ts(c.DueAt), c.DueReason,
		boolInt(c.DeleteAfterRead), int64(c.RetentionAfterRead), int64(c.GracePeriod),
		int64(max(c.Consumers, 1)), names, textOrNull(c.TraceParent)}
	ev := createdEvent(c, cand, p.Now, claimcheck.ActorFrom(q.ctx), true)
	logged := int64(0)
	var (
		b   meta.Blob
		err error
	)
	if q.d.writableCTEs {
		// One round trip for the three writes while the namespace row
		// and the candidate are held. An event whose sequence number was
		// taken already (ON CONFLICT DO NOTHING inserts nothing) is
		// logged again by appendEvents, which renumbers it.
		event := `SELECT 0 AS seq WHERE false`
		if !auditOff.Load() {
			event = `INSERT INTO events (` + eventColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT DO NOTHING RETURNING seq`
			claimArgs = append(claimArgs, ev.At.UnixNano(), ev.At.UnixNano(), ev.Kind, ev.Namespace, ev.ClaimID, ev.BlobID,
				ev.Detail, ev.Actor, ev.Reason, ev.Tenant)
		} else {
			logged = 1
		}
		b, err = scanBlob(scanWith{q.queryRow(`WITH c AS (`+insertClaim+`), e AS (`+event+`), u AS (`+update+`)
			SELECT u.*, (SELECT count(*) FROM e) FROM u`, append(claimArgs, args...)...), []any{&logged}})
	} else {
		b, err = scanBlob(q.queryRow(update, args...))
		if err == nil {
			_, err = q.exec(insertClaim, claimArgs...)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return meta.Blob{}, errRetry // changed under us (cannot happen while locked)
	}
	if err != nil {
		return meta.Blob{}, err
	}
	if err := q.insertLabels(c); err != nil {
		return meta.Blob{}, err
	}
	if logged == 0 {
		if err := q.appendEvents([]meta.Event{ev}); err != nil {
			return meta.Blob{}, err
		}
	}
	return b, nil
}

// commitExistingReferenceFirst is commitExisting where the database has
// one writer (SQLite): the transaction holds the only write lock from
// BEGIN IMMEDIATE on, so nothing can change the candidate between the
// statements, and the reference is taken by the statement that finds it.
// A hit is then four statements (reference, namespace charge, claim,
// event) instead of five, and a miss is still one that matches nothing
// and writes nothing. Whatever refuses the hit afterwards (the candidate
// is not shareable, its object fails the check, a quota) returns an
// error, and the rollback takes the reference back with the charge.
// refcount and version are in no index, so the reference writes the
// row's page only (ADR 0140); an orphaned candidate is flipped back by a
// second statement, since state, collect_at and state_at are in indexes
// a committed candidate's reference must not rewrite.
func (q *txq) commitExistingReferenceFirst(p meta.CommitExistingParams, c meta.Claim, labels, names any) (meta.CommitResult, error) {
	const take = `UPDATE blobs SET refcount = refcount + 1, version = version + 1 WHERE `
	const live = ` AND state IN ('committed', 'orphaned') RETURNING ` + blobColumns + `, dedupable`
	var (
		dedupable int64
		row       *sql.Row
	)
	if p.BlobID != "" {
		row = q.queryRow(take+`id = ?`+live, p.BlobID)
	} else {
		row = q.queryRow(take+`namespace = ? AND digest = ? AND dedupable = 1`+live, c.Namespace, p.Digest)
	}
	b, err := scanBlob(scanWith{row, []any{&dedupable}})
	if errors.Is(err, sql.ErrNoRows) {
		return meta.CommitResult{}, errNoHit
	}
	if err != nil {
		return meta.CommitResult{}, err
	}
	orphaned := b.State == meta.BlobOrphaned
	if !shareable(b, dedupable == 1, p) || (p.Check != nil && !p.Check(q.callerCtx(), b)) {
		return meta.CommitResult{}, errNoHit
	}
	delta := nsDelta{used: c.Size, active: 1}
	if p.QuotaBytes > 0 || p.QuotaClaims > 0 {
		n, err := q.addNamespace(c.Namespace, delta, p.Tenant.Tenant)
		if err != nil {
			return meta.CommitResult{}, err
		}
		if err := checkNamespaceQuota(p, c, n); err != nil {
			return meta.CommitResult{}, err
		}
	} else {
		// No namespace quota to check: the same charge, without reading
		// the counters back (a result set read inside a transaction
		// costs database/sql a goroutine).
		query, args := nsChange(c.Namespace, delta, p.Tenant.Tenant, "", nil, "")
		if _, err := q.exec(query, args...); err != nil {
			return meta.CommitResult{}, err
		}
	}
	if err := q.checkTenant(c.Namespace, p.Tenant, c.Size, 1, delta); err != nil {
		return meta.CommitResult{}, err
	}
	now := p.Now.UnixNano()
	if orphaned {
		// Live again: collection no longer sees it.
		b, err = scanBlob(q.queryRow(`UPDATE blobs SET state = 'committed', collect_at = NULL, state_at = ?
			WHERE id = ? AND state = 'orphaned' RETURNING `+blobColumns, now, b.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return meta.CommitResult{}, errRetry // changed under us (cannot happen under the write lock)
		}
		if err != nil {
			return meta.CommitResult{}, err
		}
	}
	if _, err := q.exec(`INSERT INTO claims (`+claimColumns+`)
		VALUES (?, ?, ?, 'active', ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, ?, ?, NULL, '', ?)`,
		c.ID, c.Namespace, b.ID, c.Size, c.ContentType, labels,
		c.CreatedAt.UnixNano(), ts(c.ExpiresAt), ts(c.DueAt), c.DueReason,
		boolInt(c.DeleteAfterRead), int64(c.RetentionAfterRead), int64(c.GracePeriod),
		int64(max(c.Consumers, 1)), names, textOrNull(c.TraceParent)); err != nil {
		return meta.CommitResult{}, err
	}
	if err := q.insertLabels(c); err != nil {
		return meta.CommitResult{}, err
	}
	if err := q.appendEvents([]meta.Event{createdEvent(c, b, p.Now, claimcheck.ActorFrom(q.ctx), true)}); err != nil {
		return meta.CommitResult{}, err
	}
	return meta.CommitResult{Claim: insertedClaim(c, b.ID), Blob: b, DedupHit: true, FlipBack: orphaned}, nil
}

// checkNamespaceQuota refuses a hit as the upload would be refused, and
// only a real hit: a miss is left to the upload, which checks the quota
// itself. n is the namespace as it was before the hit's charge.
func checkNamespaceQuota(p meta.CommitExistingParams, c meta.Claim, n meta.Namespace) error {
	return namespaceQuota(c.Namespace, p.QuotaBytes, p.QuotaClaims, n, c.Size)
}

// shareable reports whether a claim of p may share blob b: it is the
// dedup candidate of p's namespace and digest (dedupable, committed or
// orphaned), healthy, of the claim's size, young enough for the lifecycle
// rule (DedupNotBefore) and, when the caller checked an object, still
// that object. A damaged blob is never shared: the caller sends the
// body, whose commit repairs it.
func shareable(b meta.Blob, dedupable bool, p meta.CommitExistingParams) bool {
	return dedupable && b.Namespace == p.Claim.Namespace && b.Digest == p.Digest &&
		(b.State == meta.BlobCommitted || b.State == meta.BlobOrphaned) &&
		!b.Damaged() && b.Size == p.Claim.Size && !b.CreatedAt.Before(p.DedupNotBefore) &&
		(p.BlobID == "" || (b.ID == p.BlobID && b.Key == p.Key))
}

// insertedClaim is the row CommitExisting inserted for c on blob blobID,
// as loadClaim would read it back.
func insertedClaim(c meta.Claim, blobID string) meta.Claim {
	c.State, c.BlobID, c.ReservedBytes = meta.ClaimActive, blobID, 0
	c.Consumers = max(c.Consumers, 1)
	c.CreatedAt = time.Unix(0, c.CreatedAt.UnixNano()).UTC()
	c.ExpiresAt = fromTS(nullTS(c.ExpiresAt))
	c.DueAt = fromTS(nullTS(c.DueAt))
	c.Reads, c.FirstReadAt, c.LastReadAt = 0, time.Time{}, time.Time{}
	c.ReleasedBy, c.DeletedAt, c.DeleteReason = nil, time.Time{}, ""
	if len(c.Labels) == 0 {
		c.Labels = nil
	}
	if len(c.ConsumerNames) == 0 {
		c.ConsumerNames = nil
	}
	return c
}

// nullTS is ts as the scanners see it.
func nullTS(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

// Blobs returns a page of blobs in id order; see meta.Store.
func (s *Store) Blobs(ctx context.Context, afterID string, limit int) ([]meta.Blob, error) {
	var out []meta.Blob
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = queryAll(q, scanBlob, `SELECT `+blobColumns+` FROM blobs WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: list blobs after %q: %w", afterID, err)
	}
	return out, nil
}

// LiveRefs counts live claims per blob; see meta.Store.
func (s *Store) LiveRefs(ctx context.Context, blobIDs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(blobIDs))
	err := s.read(ctx, func(q *txq) error {
		return q.liveRefs(blobIDs, out)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: count live references: %w", err)
	}
	return out, nil
}

// liveRefsSQL counts the live claims of n blobs; like liveClaimsOfBlob it
// is answered from the partial index claims_live_blob.
func liveRefsSQL(n int) string {
	return `SELECT blob_id, COUNT(*) FROM claims
		WHERE state IN ('pending', 'active') AND blob_id IN (` + placeholders(n) + `)
		GROUP BY blob_id`
}

func (q *txq) liveRefs(blobIDs []string, into map[string]int64) error {
	return chunks(blobIDs, func(part []string) error {
		rows, err := q.query(liveRefsSQL(len(part)), anys(part)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			into[id] = n
		}
		return rows.Err()
	})
}

// FixRefcounts repairs refcount hints and orphans unreferenced committed
// blobs; see meta.Store. Counting and repairing happen in the write
// transaction, so the count is exact when it is written; a put that
// commits afterwards adds its own +1.
func (s *Store) FixRefcounts(ctx context.Context, blobIDs []string, now time.Time, grace time.Duration) ([]meta.RefFix, error) {
	ids := slices.Sorted(slices.Values(blobIDs))
	var out []meta.RefFix
	err := s.write(ctx, func(q *txq) error {
		out = nil
		// Lock the blobs first (sorted: the package's lock order), then
		// count: a put that points a new claim at one of them must lock it
		// too, so the count cannot miss a claim committed meanwhile.
		blobs := make([]meta.Blob, 0, len(ids))
		for _, id := range ids {
			b, err := q.loadBlob(id, true)
			if errors.Is(err, meta.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			blobs = append(blobs, b)
		}
		live := make(map[string]int64, len(ids))
		if err := q.liveRefs(ids, live); err != nil {
			return err
		}
		for _, b := range blobs {
			var err error
			id := b.ID
			n := live[id]
			fix := meta.RefFix{BlobID: id, Namespace: b.Namespace, State: b.State, Refcount: b.Refcount, Live: n, StoredSize: b.StoredSize}
			switch {
			case b.State == meta.BlobCommitted && n == 0:
				// No live claim: orphan it with a full grace period, so a
				// put racing with this repair can still flip it back.
				fix.Orphaned = true
				_, err = q.exec(`UPDATE blobs SET state = 'orphaned', refcount = 0, collect_at = ?, state_at = ?, version = version + 1
					WHERE id = ? AND state = 'committed'`, now.Add(grace).UnixNano(), now.UnixNano(), id)
			case b.State == meta.BlobStaging || b.State == meta.BlobDeleted:
				continue // staging counts its pending claim; deleted rows are history
			case b.Refcount != n:
				_, err = q.exec(`UPDATE blobs SET refcount = ?, version = version + 1 WHERE id = ? AND state = ?`,
					n, id, string(b.State))
			default:
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, fix)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: fix refcounts: %w", err)
	}
	return out, nil
}

// BlobsByKeys looks up the live owners of object keys; see meta.Store.
func (s *Store) BlobsByKeys(ctx context.Context, keys []string) (map[string]meta.Blob, error) {
	out := make(map[string]meta.Blob, len(keys))
	err := s.read(ctx, func(q *txq) error {
		return chunks(keys, func(part []string) error {
			rows, err := q.query(`SELECT `+blobColumns+` FROM blobs
				WHERE state <> 'deleted' AND object_key IN (`+placeholders(len(part))+`)`, anys(part)...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				b, err := scanBlob(rows)
				if err != nil {
					return err
				}
				out[b.Key] = b
			}
			return rows.Err()
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: look up %d object keys: %w", len(keys), err)
	}
	return out, nil
}

// Cursor returns a named cursor ("" if unset).
func (s *Store) Cursor(ctx context.Context, name string) (string, error) {
	var v string
	err := s.read(ctx, func(q *txq) error {
		err := q.queryRow(`SELECT value FROM cursors WHERE name = ?`, name).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			v = ""
			return nil
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("sqlmeta: cursor %s: %w", name, err)
	}
	return v, nil
}

// SetCursor stores a named cursor.
func (s *Store) SetCursor(ctx context.Context, name, value string) error {
	err := s.write(ctx, func(q *txq) error {
		_, err := q.exec(`INSERT INTO cursors (name, value) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, name, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: set cursor %s: %w", name, err)
	}
	return nil
}

// AppendEvents appends to the events log; see meta.Store.
func (s *Store) AppendEvents(ctx context.Context, events []meta.Event) error {
	if len(events) == 0 {
		return nil
	}
	err := s.write(ctx, func(q *txq) error {
		return q.appendEvents(slices.Clone(events))
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: append %d events: %w", len(events), err)
	}
	return nil
}

// Events returns a page of the events log in order.
func (s *Store) Events(ctx context.Context, afterSeq int64, limit int) ([]meta.Event, error) {
	var out []meta.Event
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = q.pageWithTrails("", afterSeq, math.MaxInt64, limit, func(after int64) ([]meta.Event, error) {
			return q.events(`WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
		}, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: events after %d: %w", afterSeq, err)
	}
	return endBetweenSeqs(out, limit, func(e meta.Event) int64 { return e.Seq }), nil
}
