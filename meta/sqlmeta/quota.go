package sqlmeta

import (
	"context"
	"fmt"

	"github.com/claimcheck/claimcheck/meta"
)

// Namespaces returns every namespace's counters; see meta.QuotaStore.
func (s *Store) Namespaces(ctx context.Context) ([]meta.Namespace, error) {
	var out []meta.Namespace
	err := s.read(ctx, func(q *txq) error {
		out = nil
		rows, err := q.query(`SELECT name, used_bytes, reserved_bytes, active_claims, pending_claims FROM namespaces ORDER BY name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n meta.Namespace
			if err := rows.Scan(&n.Name, &n.UsedBytes, &n.ReservedBytes, &n.ActiveClaims, &n.PendingClaims); err != nil {
				return err
			}
			out = append(out, n)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: list namespaces: %w", err)
	}
	return out, nil
}

// CountNamespaces recomputes the counters from the live claims; see
// meta.QuotaStore.
func (s *Store) CountNamespaces(ctx context.Context) ([]meta.Namespace, error) {
	var out []meta.Namespace
	err := s.read(ctx, func(q *txq) error {
		out = nil
		rows, err := q.query(`SELECT namespace,
				COALESCE(SUM(CASE WHEN state = 'active' THEN size ELSE 0 END), 0),
				COALESCE(SUM(CASE WHEN state = 'pending' THEN reserved_bytes ELSE 0 END), 0),
				COALESCE(SUM(CASE WHEN state = 'active' THEN 1 ELSE 0 END), 0),
				COALESCE(SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END), 0)
			FROM claims WHERE state IN ('pending', 'active')
			GROUP BY namespace ORDER BY namespace`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n meta.Namespace
			if err := rows.Scan(&n.Name, &n.UsedBytes, &n.ReservedBytes, &n.ActiveClaims, &n.PendingClaims); err != nil {
				return err
			}
			out = append(out, n)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: count namespaces from claims: %w", err)
	}
	return out, nil
}
