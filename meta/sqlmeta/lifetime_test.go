package sqlmeta

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// TestListUsesIndex: a listing of a namespace with 100,000 claims,
// filtered by a label that matches 10 of them, is answered from the label
// index (and the other listings from theirs), never by scanning the
// claims: the plan of each statement is checked, EXPLAIN QUERY PLAN on
// SQLite and EXPLAIN on PostgreSQL, and the label listing returns the 10.
func TestListUsesIndex(t *testing.T) {
	stores := map[string]func(t *testing.T) *Store{"sqlite": func(t *testing.T) *Store { return openSQLiteStore(t) }}
	if dsn := os.Getenv("TEST_DATABASE_URL"); dsn != "" {
		stores["postgres"] = func(t *testing.T) *Store { return openPostgresStore(t, dsn) }
	} else {
		t.Log("TEST_DATABASE_URL is not set: checking the SQLite plans only")
	}
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			base := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
			seedListClaims(t, s, base, n, 10)
			if s.d.name == "postgres" {
				if _, err := s.w.ExecContext(context.Background(), "ANALYZE"); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				name  string
				p     meta.ListParams
				index string
			}{
				{"label", meta.ListParams{Namespace: "big", Labels: []meta.Label{{Key: "run", Value: "needle"}}, State: meta.ClaimActive, Limit: 100}, "claim_labels_select"},
				{"label and cursor", meta.ListParams{Namespace: "big", Labels: []meta.Label{{Key: "run", Value: "needle"}, {Key: "wf", Value: "w"}},
					AfterAt: base.Add(time.Hour), AfterID: "c999", Limit: 100}, "claim_labels_select"},
				{"newest", meta.ListParams{Namespace: "big", Limit: 100}, "claims_ns_created"},
				{"expiring", meta.ListParams{Namespace: "big", Order: meta.OrderExpiring, ExpiresBefore: base.Add(time.Hour), Limit: 100}, "claims_ns_expiring"},
				// A window cuts the range first, and the filters read its rows only.
				{"newest, a state, a window", meta.ListParams{Namespace: "big", State: meta.ClaimDeleted, Window: 1000, Limit: 100}, "claims_ns_created"},
				{"label, a state, a window", meta.ListParams{Namespace: "big", Labels: []meta.Label{{Key: "run", Value: "needle"}}, State: meta.ClaimActive, Window: 1000, Limit: 100}, "claim_labels_select"},
				{"expiring, a window", meta.ListParams{Namespace: "big", Order: meta.OrderExpiring, ExpiresBefore: base.Add(time.Hour), Window: 1000, Limit: 100}, "claims_ns_expiring"},
			} {
				plan := explainList(t, s, tc.p)
				if !strings.Contains(plan, tc.index) || strings.Contains(plan, "SCAN claims\n") || strings.Contains(plan, "Seq Scan on claims") {
					t.Errorf("%s: the plan does not read %s, or scans claims:\n%s", tc.name, tc.index, plan)
				} else {
					t.Logf("%s on %d claims:\n%s", tc.name, n, plan)
				}
			}
			page, err := s.ListClaims(context.Background(), meta.ListParams{Namespace: "big", Labels: []meta.Label{{Key: "run", Value: "needle"}}, Limit: 100})
			if err != nil || len(page.Claims) != 10 {
				t.Fatalf("label listing: %d claims, %v; want 10", len(page.Claims), err)
			}
		})
	}
}

// explainList returns the database's plan of the listing's statement,
// one step per line.
func explainList(t *testing.T, s *Store, p meta.ListParams) string {
	t.Helper()
	query, args := listQuery(p)
	prefix := "EXPLAIN QUERY PLAN "
	if s.d.name == "postgres" {
		prefix = "EXPLAIN "
	}
	var b strings.Builder
	err := s.read(context.Background(), func(q *txq) error {
		b.Reset()
		rows, err := q.db.QueryContext(q.ctx, q.d.rebind(prefix+query), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			fmt.Fprintf(&b, "%v\n", vals[len(vals)-1])
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	return b.String()
}

// seedListClaims inserts n active claims of namespace "big" on one blob,
// created a second apart, each labelled run=r<i> and wf=w, except match of
// them labelled run=needle; and as many claims of namespace "other"
// labelled run=needle, which the listing of "big" must not read.
func seedListClaims(t testing.TB, s *Store, base time.Time, n, match int) {
	t.Helper()
	const batch = 500
	err := s.write(context.Background(), func(q *txq) error {
		for _, ns := range []string{"big", "other"} {
			if err := q.ensureNamespace(ns); err != nil {
				return err
			}
			if _, err := q.exec(`INSERT INTO blobs (id, namespace, digest, dedupable, size, stored_size, compression,
				object_key, state, refcount, created_at, state_at, collect_at, version)
				VALUES (?, ?, 'sha256:x', 1, 1000, 500, 'zstd', ?, 'committed', 1, ?, ?, NULL, 1)`,
				"b_"+ns, ns, ns+"/b", base.UnixNano(), base.UnixNano()); err != nil {
				return err
			}
		}
		for start := 0; start < 2*n; start += batch {
			var (
				claims, labels []string
				cargs, largs   []any
			)
			for i := start; i < min(start+batch, 2*n); i++ {
				ns, j := "big", i
				if i >= n {
					ns, j = "other", i-n
				}
				id := fmt.Sprintf("c_%s_%07d", ns, j)
				created := base.Add(time.Duration(j) * time.Second).UnixNano()
				expires := created + int64(24*time.Hour)
				run := fmt.Sprintf("r%d", j)
				if j%(n/match) == 0 {
					run = "needle"
				}
				claims = append(claims, "(?, ?, ?, 'active', 1000, 0, ?, ?, ?, 'expired', 1)")
				cargs = append(cargs, id, ns, "b_"+ns, created, expires, expires)
				labels = append(labels, "(?, ?, 'run', ?, ?)", "(?, ?, 'wf', 'w', ?)")
				largs = append(largs, id, ns, run, created, id, ns, created)
			}
			if _, err := q.exec(`INSERT INTO claims (id, namespace, blob_id, state, size, reserved_bytes, created_at,
				expires_at, due_at, due_reason, consumers) VALUES `+strings.Join(claims, ", "), cargs...); err != nil {
				return err
			}
			if _, err := q.exec(`INSERT INTO claim_labels (claim_id, namespace, label_key, label_value, created_at) VALUES `+
				strings.Join(labels, ", "), largs...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBackfillLabels: the step after migration 0022 copies the labels of
// claims that existed before it into claim_labels, so that a listing by
// label finds them too.
func TestBackfillLabels(t *testing.T) {
	s := openSQLiteStore(t)
	defer s.Close()
	base := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
	seedListClaims(t, s, base, 2500, 10)
	ctx := context.Background()
	// As a database migrated before 0022 would be: labels in the JSON
	// column only.
	err := s.write(ctx, func(q *txq) error {
		if _, err := q.exec(`UPDATE claims SET labels = '{"run":"old","wf":"w"}' WHERE namespace = 'big'`); err != nil {
			return err
		}
		_, err := q.exec(`DELETE FROM claim_labels`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(ctx, backfillLabels); err != nil {
		t.Fatalf("backfill: %v", err)
	}
	page, err := s.ListClaims(ctx, meta.ListParams{Namespace: "big", Labels: []meta.Label{{Key: "run", Value: "old"}, {Key: "wf", Value: "w"}}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	cs := page.Claims
	var n int
	if err := s.read(ctx, func(q *txq) error {
		return q.queryRow(`SELECT COUNT(*) FROM claim_labels`).Scan(&n)
	}); err != nil || n != 5000 {
		t.Fatalf("claim_labels has %d rows after the backfill (%v), want 2 per claim of big = 5000", n, err)
	}
	if len(cs) != 1000 {
		t.Fatalf("listing by the backfilled labels: %d, want a full page", len(cs))
	}
}
