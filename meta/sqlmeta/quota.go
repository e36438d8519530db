package sqlmeta

import (
	"context"
	"fmt"

	"github.com/claimcheck/claimcheck/meta"
)

// Namespaces returns every namespace's counters; see meta.QuotaStore.
func (s *Store) Namespaces(ctx context.Context) ([]meta.Namespace, error) {
	return s.namespaceRows(ctx, "list namespaces",
		`SELECT name, used_bytes, reserved_bytes, active_claims, pending_claims, finished_claims FROM namespaces ORDER BY name`)
}

// CountNamespaces recomputes the counters from the live claims; see
// meta.QuotaStore.
func (s *Store) CountNamespaces(ctx context.Context) ([]meta.Namespace, error) {
	return s.namespaceRows(ctx, "count namespaces from claims", `SELECT namespace,
			COALESCE(SUM(CASE WHEN state = 'active' THEN size ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state = 'pending' THEN reserved_bytes ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state = 'active' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END), 0),
			0
		FROM claims WHERE state IN ('pending', 'active')
		GROUP BY namespace ORDER BY namespace`)
}

// namespaceRows runs a read query whose rows are namespace counters (name,
// used bytes, reserved bytes, active claims, pending claims, finished claims), in one read
// transaction; what names the query in the error.
func (s *Store) namespaceRows(ctx context.Context, what, query string) ([]meta.Namespace, error) {
	var out []meta.Namespace
	err := s.read(ctx, func(q *txq) error {
		out = nil
		rows, err := q.query(query)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n meta.Namespace
			if err := rows.Scan(&n.Name, &n.UsedBytes, &n.ReservedBytes, &n.ActiveClaims, &n.PendingClaims, &n.FinishedClaims); err != nil {
				return err
			}
			out = append(out, n)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: %s: %w", what, err)
	}
	return out, nil
}

// QuotaDrift compares counters and claim sums in one statement; see
// meta.QuotaStore. Claims of a namespace without a counter row (which no
// path creates) show up too, against zero counters.
func (s *Store) QuotaDrift(ctx context.Context) ([]meta.QuotaDrift, error) {
	var out []meta.QuotaDrift
	err := s.read(ctx, func(q *txq) error {
		out = nil
		rows, err := q.query(`WITH sums AS (
				SELECT namespace,
					SUM(CASE WHEN state = 'active' THEN size ELSE 0 END) AS used,
					SUM(CASE WHEN state = 'pending' THEN reserved_bytes ELSE 0 END) AS reserved,
					SUM(CASE WHEN state = 'active' THEN 1 ELSE 0 END) AS active,
					SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END) AS pending
				FROM claims WHERE state IN ('pending', 'active') GROUP BY namespace),
			names AS (SELECT name FROM namespaces UNION SELECT namespace FROM sums)
			SELECT names.name,
				COALESCE(n.used_bytes, 0), COALESCE(n.reserved_bytes, 0), COALESCE(n.active_claims, 0), COALESCE(n.pending_claims, 0),
				COALESCE(sums.used, 0), COALESCE(sums.reserved, 0), COALESCE(sums.active, 0), COALESCE(sums.pending, 0)
			FROM names
			LEFT JOIN namespaces n ON n.name = names.name
			LEFT JOIN sums ON sums.namespace = names.name
			ORDER BY names.name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d meta.QuotaDrift
			if err := rows.Scan(&d.Counters.Name,
				&d.Counters.UsedBytes, &d.Counters.ReservedBytes, &d.Counters.ActiveClaims, &d.Counters.PendingClaims,
				&d.Claims.UsedBytes, &d.Claims.ReservedBytes, &d.Claims.ActiveClaims, &d.Claims.PendingClaims); err != nil {
				return err
			}
			d.Claims.Name = d.Counters.Name
			if d.Counters != d.Claims {
				out = append(out, d)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: quota drift: %w", err)
	}
	return out, nil
}
