package sqlmeta

import (
	"context"
	"fmt"

	"github.com/claimcheck/claimcheck/meta"
)

// needsSum reports whether checkTenant must sum the tenant's usage to
// admit addBytes and addClaims: only when one of its limits applies.
func needsSum(t meta.TenantQuota, addBytes, addClaims int64) bool {
	return t.Tenant != "" && ((t.Bytes > 0 && addBytes > 0) || (t.Claims > 0 && addClaims > 0))
}

// checkTenant checks that adding addBytes and addClaims keeps the
// tenant t.Tenant within its quota, in the caller's transaction, which
// has recorded t.Tenant as the namespace's tenant (nsChange). The
// caller holds the namespace row (lock order: claim, blobs, namespace,
// tenant). The tenant row is locked before the
// usage is summed, so admissions of one tenant are serialised and the
// sum, read by a later statement, includes every admission before it;
// finishes only lower usage and need no lock. applied is what the caller
// has already added to the namespace's counters in this transaction
// (addNamespace); the sum leaves it out, so that it is not counted twice.
func (q *txq) checkTenant(ns string, t meta.TenantQuota, addBytes, addClaims int64, applied nsDelta) error {
	if !needsSum(t, addBytes, addClaims) {
		return nil
	}
	if _, err := q.exec(`INSERT INTO tenants (name) VALUES (?) ON CONFLICT (name) DO NOTHING`, t.Tenant); err != nil {
		return err
	}
	if q.d.lockRow != "" {
		var name string
		if err := q.queryRow(`SELECT name FROM tenants WHERE name = ?`+q.d.lockRow, t.Tenant).Scan(&name); err != nil {
			return err
		}
	}
	var u meta.TenantUsage
	if err := q.queryRow(`SELECT COALESCE(SUM(used_bytes), 0), COALESCE(SUM(reserved_bytes), 0),
			COALESCE(SUM(active_claims), 0), COALESCE(SUM(pending_claims), 0)
		FROM namespaces WHERE tenant = ?`, t.Tenant).
		Scan(&u.UsedBytes, &u.ReservedBytes, &u.ActiveClaims, &u.PendingClaims); err != nil {
		return err
	}
	u.UsedBytes -= applied.used
	u.ReservedBytes -= applied.reserved
	u.ActiveClaims -= applied.active
	u.PendingClaims -= applied.pending
	if t.Bytes > 0 && addBytes > 0 && u.UsedBytes+u.ReservedBytes+addBytes > t.Bytes {
		return &meta.QuotaError{Tenant: t.Tenant, Namespace: ns, Resource: "bytes", Limit: t.Bytes,
			Used: u.UsedBytes, Reserved: u.ReservedBytes, Requested: addBytes}
	}
	if t.Claims > 0 && addClaims > 0 && u.ActiveClaims+u.PendingClaims+addClaims > t.Claims {
		return &meta.QuotaError{Tenant: t.Tenant, Namespace: ns, Resource: "claims", Limit: t.Claims,
			Used: u.ActiveClaims, Reserved: u.PendingClaims, Requested: addClaims}
	}
	return nil
}

// Tenants returns the usage of every tenant; see meta.TenantStore.
func (s *Store) Tenants(ctx context.Context) ([]meta.TenantUsage, error) {
	var out []meta.TenantUsage
	err := s.read(ctx, func(q *txq) error {
		out = nil
		rows, err := q.query(`SELECT tenant, COUNT(*), COALESCE(SUM(used_bytes), 0), COALESCE(SUM(reserved_bytes), 0),
				COALESCE(SUM(active_claims), 0), COALESCE(SUM(pending_claims), 0)
			FROM namespaces GROUP BY tenant ORDER BY tenant`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var u meta.TenantUsage
			if err := rows.Scan(&u.Name, &u.Namespaces, &u.UsedBytes, &u.ReservedBytes, &u.ActiveClaims, &u.PendingClaims); err != nil {
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
