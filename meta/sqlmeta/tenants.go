package sqlmeta

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/claimcheck/claimcheck/meta"
)

// needsSum reports whether checkTenant must check the tenant's quota to
// admit addBytes and addClaims: only when one of its limits applies.
func needsSum(t meta.TenantQuota, addBytes, addClaims int64) bool {
	return t.Tenant != "" && ((t.Bytes > 0 && addBytes > 0) || (t.Claims > 0 && addClaims > 0))
}

// allotKey names the tenant and limits of t in namespaces.allot_key: an
// allotment drawn under another key counts for nothing (migration 0061).
func allotKey(t meta.TenantQuota) string {
	return fmt.Sprintf("%d:%d:%s", t.Bytes, t.Claims, t.Tenant)
}

// allotChunk is the headroom a draw gives a namespace beyond what its
// put needs, so that the next puts fit without drawing: a 32nd of the
// limit, at least 1.
func allotChunk(limit int64) int64 {
	return max(limit/32, 1)
}

// needTenantLock asks write to run the transaction again with the row
// of tenant locked first (Store.write): the namespace's allotment did
// not admit the put, and only a draw under the tenant's lock can.
type needTenantLock struct{ tenant string }

func (e *needTenantLock) Error() string {
	return "sqlmeta: the allotment of tenant " + e.tenant + " must be drawn under its lock"
}

// errNeedsDraw: a statement that admits a put only within its
// namespace's allotment (allotmentWhere) did not admit it; the put runs
// as a transaction, which draws (checkTenant).
var errNeedsDraw = errors.New("sqlmeta: the namespace's allotment of its tenant's quota does not admit the put")

// allotmentWhere adds to the only and where of a counter change that
// adds addBytes and addClaims (nsChange) the conditions that admit it
// within the namespace's allotment of t, when t has a limit that
// applies: the namespace has a row with an allotment of t's key (a new
// namespace draws first), and its usage after the change fits it. A
// change they refuse is a draw's to make (errNeedsDraw).
func allotmentWhere(t meta.TenantQuota, ns string, addBytes, addClaims int64, only string, onlyArgs []any, where string, whereArgs []any) (string, []any, string, []any) {
	if !needsSum(t, addBytes, addClaims) {
		return only, onlyArgs, where, whereArgs
	}
	key := allotKey(t)
	only += ` AND EXISTS (SELECT 1 FROM namespaces WHERE name = ? AND allot_key = ?)`
	onlyArgs = append(onlyArgs, ns, key)
	conds := []string{`namespaces.allot_key = ?`}
	if where != "" {
		conds = append([]string{where}, conds...)
	}
	whereArgs = append(whereArgs, key)
	if t.Bytes > 0 {
		conds = append(conds, `namespaces.used_bytes + namespaces.reserved_bytes + excluded.reserved_bytes <= namespaces.allot_bytes`)
	}
	if t.Claims > 0 {
		conds = append(conds, `namespaces.active_claims + namespaces.pending_claims + excluded.pending_claims <= namespaces.allot_claims`)
	}
	return only, onlyArgs, strings.Join(conds, ` AND `), whereArgs
}

// lockTenant locks tenant's row, creating it on first use, in one
// statement (an upsert that updates locks the row it finds).
func (q *txq) lockTenant(tenant string) error {
	_, err := q.exec(`INSERT INTO tenants (name) VALUES (?) ON CONFLICT (name) DO UPDATE SET name = excluded.name`, tenant)
	return err
}

// checkTenant checks that adding addBytes and addClaims keeps the
// tenant t.Tenant within its quota, in the caller's transaction, which
// has applied them (applied: the whole change it made to the
// namespace's counters) and recorded t.Tenant as the namespace's tenant
// (nsChange), and so holds the namespace row (lock order: tenant when
// drawing, claim, blobs, namespace, the tenant's other namespaces).
//
// The namespace's allotment (migration 0061, ADR 0264) admits the put
// when it was drawn under t and the namespace's usage, this put
// included, is within it: then nothing but the namespace's row is read.
// Otherwise the transaction is run again with the tenant row locked
// first (needTenantLock), and that run draws: it sums what the tenant's
// other namespaces hold (the larger of allotment and usage), takes their
// unused allotments back when that leaves too little, refuses the put
// when the tenant's usage would pass its limit, and else gives the
// namespace what it needs plus a chunk, committed with the put itself.
// A namespace grows only within its allotment or under the tenant's
// lock, and draws are serialised by it, so what the tenant's namespaces
// hold never passes its limit, concurrent puts of any namespaces
// included; finishes only lower usage and need no lock.
func (q *txq) checkTenant(ns string, t meta.TenantQuota, addBytes, addClaims int64, applied nsDelta) error {
	if !needsSum(t, addBytes, addClaims) {
		return nil
	}
	var (
		n                      meta.Namespace
		allotBytes, allotCount int64
		key                    string
	)
	if err := q.queryRow(`SELECT used_bytes, reserved_bytes, active_claims, pending_claims, allot_bytes, allot_claims, allot_key
		FROM namespaces WHERE name = ?`, ns).
		Scan(&n.UsedBytes, &n.ReservedBytes, &n.ActiveClaims, &n.PendingClaims, &allotBytes, &allotCount, &key); err != nil {
		return err
	}
	needBytes, needClaims := n.UsedBytes+n.ReservedBytes, n.ActiveClaims+n.PendingClaims
	fitsBytes := t.Bytes <= 0 || addBytes <= 0 || needBytes <= allotBytes
	fitsClaims := t.Claims <= 0 || addClaims <= 0 || needClaims <= allotCount
	want := allotKey(t)
	if key == want && fitsBytes && fitsClaims {
		return nil
	}
	if q.tenantLocked != t.Tenant {
		return &needTenantLock{tenant: t.Tenant}
	}
	// Drawing, under the tenant's lock: what the other namespaces hold.
	var others meta.TenantUsage
	var heldBytes, heldClaims int64
	held := func() error {
		return q.queryRow(`SELECT COALESCE(SUM(used_bytes), 0), COALESCE(SUM(reserved_bytes), 0),
				COALESCE(SUM(active_claims), 0), COALESCE(SUM(pending_claims), 0),
				COALESCE(SUM(CASE WHEN allot_key = ? AND allot_bytes > used_bytes + reserved_bytes
					THEN allot_bytes ELSE used_bytes + reserved_bytes END), 0),
				COALESCE(SUM(CASE WHEN allot_key = ? AND allot_claims > active_claims + pending_claims
					THEN allot_claims ELSE active_claims + pending_claims END), 0)
			FROM namespaces WHERE tenant = ? AND name <> ?`, want, want, t.Tenant, ns).
			Scan(&others.UsedBytes, &others.ReservedBytes, &others.ActiveClaims, &others.PendingClaims, &heldBytes, &heldClaims)
	}
	if err := held(); err != nil {
		return err
	}
	short := (t.Bytes > 0 && addBytes > 0 && heldBytes+needBytes > t.Bytes) ||
		(t.Claims > 0 && addClaims > 0 && heldClaims+needClaims > t.Claims)
	if short {
		// Give back: the other namespaces keep what they use, and draw
		// again (under this lock) when they next grow.
		if _, err := q.exec(`UPDATE namespaces SET allot_bytes = used_bytes + reserved_bytes,
				allot_claims = active_claims + pending_claims
			WHERE tenant = ? AND name <> ? AND allot_key = ?
				AND (allot_bytes > used_bytes + reserved_bytes OR allot_claims > active_claims + pending_claims)`,
			t.Tenant, ns, want); err != nil {
			return err
		}
		if err := held(); err != nil {
			return err
		}
	}
	// The tenant's usage before this change, as the error reports it.
	usedBefore, reservedBefore := others.UsedBytes+n.UsedBytes-applied.used, others.ReservedBytes+n.ReservedBytes-applied.reserved
	if t.Bytes > 0 && addBytes > 0 && heldBytes+needBytes > t.Bytes {
		return &meta.QuotaError{Tenant: t.Tenant, Namespace: ns, Resource: "bytes", Limit: t.Bytes,
			Used: usedBefore, Reserved: reservedBefore, Requested: addBytes}
	}
	if t.Claims > 0 && addClaims > 0 && heldClaims+needClaims > t.Claims {
		return &meta.QuotaError{Tenant: t.Tenant, Namespace: ns, Resource: "claims", Limit: t.Claims,
			Used: others.ActiveClaims + n.ActiveClaims - applied.active, Reserved: others.PendingClaims + n.PendingClaims - applied.pending,
			Requested: addClaims}
	}
	grant := func(limit, held, need int64) int64 {
		if limit <= 0 {
			return 0
		}
		return max(min(limit-held, need+allotChunk(limit)), 0)
	}
	_, err := q.exec(`UPDATE namespaces SET allot_bytes = ?, allot_claims = ?, allot_key = ? WHERE name = ?`,
		grant(t.Bytes, heldBytes, needBytes), grant(t.Claims, heldClaims, needClaims), want, ns)
	return err
}

// Tenants returns the usage of every tenant; see meta.TenantStore.
func (s *Store) Tenants(ctx context.Context) ([]meta.TenantUsage, error) {
	var out []meta.TenantUsage
	err := s.read(ctx, func(q *txq) error {
		out = nil
		rows, err := q.query(`SELECT tenant, COUNT(*), COALESCE(SUM(used_bytes), 0), COALESCE(SUM(reserved_bytes), 0),
				COALESCE(SUM(active_claims), 0), COALESCE(SUM(pending_claims), 0), COALESCE(SUM(finished_claims), 0)
			FROM namespaces GROUP BY tenant ORDER BY tenant`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var u meta.TenantUsage
			if err := rows.Scan(&u.Name, &u.Namespaces, &u.UsedBytes, &u.ReservedBytes, &u.ActiveClaims, &u.PendingClaims, &u.FinishedClaims); err != nil {
				return err
			}
			out = append(out, u)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: tenant usage: %w", err)
	}
	return out, nil
}

// SetTenants records the namespaces' tenants; see meta.TenantStore. It
// reads every namespace row (there are few) and rewrites only those that
// changed.
func (s *Store) SetTenants(ctx context.Context, byNamespace map[string]string, others string) error {
	err := s.write(ctx, func(q *txq) error {
		rows, err := q.query(`SELECT name, tenant FROM namespaces ORDER BY name`)
		if err != nil {
			return err
		}
		var names, tenants []string
		for rows.Next() {
			var name, tenant string
			if err := rows.Scan(&name, &tenant); err != nil {
				rows.Close()
				return err
			}
			want, ok := byNamespace[name]
			if !ok {
				want = others
			}
			if want != "" && want != tenant {
				names, tenants = append(names, name), append(tenants, want)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i, name := range names {
			if _, err := q.exec(`UPDATE namespaces SET tenant = ? WHERE name = ?`, tenants[i], name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: set namespace tenants: %w", err)
	}
	return nil
}
