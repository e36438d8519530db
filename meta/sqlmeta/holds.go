package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// Legal holds (meta.HoldStore, migration 0013, ADR 0065).
//
// Invariant: an active claim that has a hold of its own, or belongs to a
// namespace with a row in namespace_holds, is never moved to deleted.
// finish() enforces it in the finishing UPDATE itself (holdGuard), so the
// check and the state change are one compare-and-swap on the row: a
// concurrent SetClaimHold or SetNamespaceHold (which parks every active
// claim of the namespace, touching each row) either changes the row first
// and the finish does not happen, or waits for the finish and finds the
// claim deleted.

// Audit: every set or lift that changes a hold appends a hold_set or
// hold_cleared event in its own transaction (ADR 0070). Whether it changes
// anything is decided on rows the transaction has locked (the claim row,
// the namespace_holds row), so a concurrent set and lift of the same hold
// cannot both think the other one's state was there before them.

// logHold appends the audit event of setting or lifting a hold: claim c's
// own hold when c is not nil, else the hold of namespace ns. reason is
// the hold's free-text reason.
func (q *txq) logHold(kind string, c *meta.Claim, ns, reason string, now time.Time) error {
	e := meta.Event{At: now, Kind: kind, Namespace: ns, Actor: claimcheck.ActorFrom(q.ctx),
		Reason: meta.HoldScopeNamespace, Detail: reason}
	if c != nil {
		e.Namespace, e.ClaimID, e.BlobID, e.Reason = c.Namespace, c.ID, c.BlobID, meta.HoldScopeClaim
	}
	return q.appendEvents([]meta.Event{e})
}

// holdGuard is appended to the finishing UPDATE of active claims.
const holdGuard = ` AND parked = 0 AND NOT EXISTS (SELECT 1 FROM namespace_holds h WHERE h.namespace = claims.namespace)`

// parkHeldNamespaces parks the active claims among cs whose namespace is
// on hold: they became active after the hold was set (or came due while
// it was being set), and finish is about to skip them. Parked, they leave
// the due index, so the sweeper does not read them again.
func (q *txq) parkHeldNamespaces(cs []meta.Claim) error {
	nss := make(map[string]bool)
	for _, c := range cs {
		if c.State == meta.ClaimActive {
			nss[c.Namespace] = true
		}
	}
	if len(nss) == 0 {
		return nil
	}
	held := make(map[string]bool)
	names := slices.Sorted(maps.Keys(nss))
	err := chunks(names, func(part []string) error {
		rows, err := q.query(`SELECT namespace FROM namespace_holds WHERE namespace IN (`+placeholders(len(part))+`)`, anys(part)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ns string
			if err := rows.Scan(&ns); err != nil {
				return err
			}
			held[ns] = true
		}
		return rows.Err()
	})
	if err != nil || len(held) == 0 {
		return err
	}
	var ids []string
	for _, c := range cs {
		if c.State == meta.ClaimActive && held[c.Namespace] {
			ids = append(ids, c.ID)
		}
	}
	return chunks(ids, func(part []string) error {
		_, err := q.exec(`UPDATE claims SET parked = 1 WHERE state = 'active' AND parked = 0 AND id IN (`+placeholders(len(part))+`)`, anys(part)...)
		return err
	})
}

// SetClaimHold puts an active claim on hold; see meta.HoldStore.
func (s *Store) SetClaimHold(ctx context.Context, id, reason string, now time.Time) error {
	err := s.write(ctx, func(q *txq) error {
		c, err := q.loadClaim(id, true)
		if err != nil {
			return err
		}
		if c.State != meta.ClaimActive {
			return fmt.Errorf("claim is %s, not active: %w", c.State, meta.ErrConflict)
		}
		_, prev, err := q.claimHold(id) // the row is locked by loadClaim
		if err != nil {
			return err
		}
		n, err := q.exec(`UPDATE claims SET held_at = COALESCE(held_at, ?), hold_reason = ?, parked = 1
			WHERE id = ? AND state = 'active' AND (parked = 1 OR due_at IS NULL OR due_at > ?)`,
			now.UnixNano(), reason, id, now.UnixNano())
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("claim was due at %s (%s): %w", c.DueAt.Format(time.RFC3339Nano), c.DueReason, meta.ErrConflict)
		}
		if prev != nil && prev.Reason == reason {
			return nil // set again as it was: nothing changed, nothing to log
		}
		return q.logHold(meta.EventHoldSet, &c, "", reason, now)
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: hold claim %s: %w", id, err)
	}
	return nil
}

// ClearClaimHold lifts a claim's own hold; see meta.HoldStore.
func (s *Store) ClearClaimHold(ctx context.Context, id string, now time.Time) (meta.FinishResult, bool, error) {
	var (
		res      meta.FinishResult
		finished bool
	)
	err := s.write(ctx, func(q *txq) error {
		res, finished = meta.FinishResult{}, false
		c, err := q.loadClaim(id, true)
		if err != nil {
			return err
		}
		h, err := q.claimHolds(id)
		if err != nil {
			return err
		}
		if c.State != meta.ClaimActive || h.Claim == nil {
			return nil // no hold to lift: nothing changes, nothing is logged
		}
		// Logged before the finish below, so that the claim's trail reads
		// hold_cleared, then the finish it caused.
		if err := q.logHold(meta.EventHoldCleared, &c, "", h.Claim.Reason, now); err != nil {
			return err
		}
		if h.Namespace != nil {
			// Still parked: the namespace hold keeps it.
			_, err := q.exec(`UPDATE claims SET held_at = NULL, hold_reason = '' WHERE id = ?`, id)
			return err
		}
		if _, err := q.exec(`UPDATE claims SET held_at = NULL, hold_reason = '', parked = 0 WHERE id = ?`, id); err != nil {
			return err
		}
		if c.DueAt.IsZero() || c.DueAt.After(now) {
			return nil
		}
		rs, err := q.finish([]meta.Claim{c}, []string{c.DueReason}, now)
		if err != nil {
			return err
		}
		if len(rs) == 1 {
			res, finished = rs[0], true
		}
		return nil
	})
	if err != nil {
		return meta.FinishResult{}, false, fmt.Errorf("sqlmeta: lift hold of claim %s: %w", id, err)
	}
	return res, finished, nil
}

// SetNamespaceHold puts a namespace on hold; see meta.HoldStore.
func (s *Store) SetNamespaceHold(ctx context.Context, ns, reason string, now time.Time) (int64, error) {
	var parked int64
	err := s.write(ctx, func(q *txq) error {
		// The namespace row is the serialisation point with
		// DestroyDataKey, which refuses to shred a held namespace.
		if err := q.ensureNamespace(ns); err != nil {
			return err
		}
		if _, err := q.loadNamespace(ns); err != nil {
			return err
		}
		// Locked, so that a concurrent lift either deletes the hold before
		// this read (then this inserts it anew, and logs) or after this
		// transaction.
		prev, err := q.lockNamespaceHold(ns)
		if err != nil {
			return err
		}
		if _, err := q.exec(`INSERT INTO namespace_holds (namespace, reason, held_at) VALUES (?, ?, ?)
			ON CONFLICT (namespace) DO UPDATE SET reason = excluded.reason`, ns, reason, now.UnixNano()); err != nil {
			return err
		}
		parked, err = q.exec(`UPDATE claims SET parked = 1 WHERE namespace = ? AND state = 'active' AND parked = 0`, ns)
		if err != nil || (prev != nil && prev.Reason == reason) {
			return err // set again as it was: nothing changed, nothing to log
		}
		return q.logHold(meta.EventHoldSet, nil, ns, reason, now)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlmeta: hold namespace %s: %w", ns, err)
	}
	return parked, nil
}

// ClearNamespaceHold lifts a namespace hold; see meta.HoldStore.
func (s *Store) ClearNamespaceHold(ctx context.Context, ns string, now time.Time) ([]meta.FinishResult, error) {
	var res []meta.FinishResult
	err := s.write(ctx, func(q *txq) error {
		res = nil
		// The deleted row's reason goes into the event; no row: no hold
		// was set, nothing changes and nothing is logged.
		var reason string
		err := q.queryRow(`DELETE FROM namespace_holds WHERE namespace = ? RETURNING reason`, ns).Scan(&reason)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := q.logHold(meta.EventHoldCleared, nil, ns, reason, now); err != nil {
			return err
		}
		rows, err := q.query(`SELECT `+claimColumns+` FROM claims
			WHERE namespace = ? AND parked = 1 AND held_at IS NULL AND state = 'active' ORDER BY id`+q.d.lockRow, ns)
		if err != nil {
			return err
		}
		var due []meta.Claim
		for rows.Next() {
			c, err := scanClaim(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if !c.DueAt.IsZero() && !c.DueAt.After(now) {
				due = append(due, c)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := q.exec(`UPDATE claims SET parked = 0 WHERE namespace = ? AND parked = 1 AND held_at IS NULL`, ns); err != nil {
			return err
		}
		if len(due) == 0 {
			return nil
		}
		ptrs := make([]*meta.Claim, len(due))
		reasons := make([]string, len(due))
		for i := range due {
			ptrs[i] = &due[i]
			reasons[i] = due[i].DueReason
		}
		if err := q.loadReleases(ptrs); err != nil {
			return err
		}
		res, err = q.finish(due, reasons, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: lift hold of namespace %s: %w", ns, err)
	}
	return res, nil
}

// ClaimHolds returns the holds that keep a claim; see meta.HoldStore.
func (s *Store) ClaimHolds(ctx context.Context, id string) (meta.ClaimHolds, error) {
	var h meta.ClaimHolds
	err := s.read(ctx, func(q *txq) error {
		var err error
		h, err = q.claimHolds(id)
		return err
	})
	if err != nil {
		return meta.ClaimHolds{}, fmt.Errorf("sqlmeta: holds of claim %s: %w", id, err)
	}
	return h, nil
}

func (q *txq) claimHolds(id string) (meta.ClaimHolds, error) {
	var h meta.ClaimHolds
	ns, own, err := q.claimHold(id)
	if err != nil {
		return h, err
	}
	h.Claim = own
	h.Namespace, err = q.namespaceHold(ns)
	return h, err
}

// claimHold returns the claim's namespace and its own hold, nil if none.
func (q *txq) claimHold(id string) (string, *meta.Hold, error) {
	var (
		ns     string
		heldAt sql.NullInt64
		reason string
	)
	err := q.queryRow(`SELECT namespace, held_at, hold_reason FROM claims WHERE id = ?`, id).Scan(&ns, &heldAt, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, fmt.Errorf("claim %s: %w", id, meta.ErrNotFound)
	}
	if err != nil || !heldAt.Valid {
		return ns, nil, err
	}
	return ns, &meta.Hold{Reason: reason, At: fromTS(heldAt)}, nil
}

// NamespaceHold returns a namespace's hold; see meta.HoldStore.
func (s *Store) NamespaceHold(ctx context.Context, ns string) (*meta.Hold, error) {
	var h *meta.Hold
	err := s.read(ctx, func(q *txq) error {
		var err error
		h, err = q.namespaceHold(ns)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: hold of namespace %s: %w", ns, err)
	}
	return h, nil
}

// namespaceHold reads a namespace's hold, nil if none.
func (q *txq) namespaceHold(ns string) (*meta.Hold, error) {
	return q.readNamespaceHold(ns, "")
}

// lockNamespaceHold reads a namespace's hold and locks its row for the
// transaction.
func (q *txq) lockNamespaceHold(ns string) (*meta.Hold, error) {
	return q.readNamespaceHold(ns, q.d.lockRow)
}

func (q *txq) readNamespaceHold(ns, lock string) (*meta.Hold, error) {
	var (
		reason string
		at     int64
	)
	err := q.queryRow(`SELECT reason, held_at FROM namespace_holds WHERE namespace = ?`+lock, ns).Scan(&reason, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &meta.Hold{Reason: reason, At: time.Unix(0, at).UTC()}, nil
}

// HeldClaims counts the claims of ns with a hold of their own.
func (s *Store) HeldClaims(ctx context.Context, ns string) (int64, error) {
	var n int64
	err := s.read(ctx, func(q *txq) error {
		return q.queryRow(`SELECT COUNT(*) FROM claims WHERE namespace = ? AND held_at IS NOT NULL`, ns).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlmeta: held claims of %s: %w", ns, err)
	}
	return n, nil
}
