package sqlmeta

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// distributedTables are the tables a PostgreSQL distributed by namespace
// distributes (ADR 0264), each with its distribution column: every
// table that grows with claims, and the namespaces' counter rows,
// colocated with them. The others are reference or local tables.
var distributedTables = map[string]string{
	"claims":          "namespace",
	"blobs":           "namespace",
	"uploads":         "namespace",
	"upload_progress": "namespace",
	"claim_labels":    "namespace",
	"claim_releases":  "namespace",
	"object_blocks":   "namespace",
	"namespaces":      "name",
}

// TestPostgresDistributionKeys reads the catalog of a migrated store:
// every primary key and unique index of a distributed table includes
// its distribution column (what create_distributed_table requires).
func TestPostgresDistributionKeys(t *testing.T) {
	dsn := os.Getenv("TEST_DATABASE_URL")
	if dsn == "" {
		t.Skip("TEST_DATABASE_URL is not set: skipping the PostgreSQL catalog check of the distribution keys")
	}
	s := openPostgresStore(t, dsn)
	defer s.Close()
	checkDistributionKeys(t, s)
}

// checkDistributionKeys fails t for every primary key or unique index of
// a distributed table without its distribution column.
func checkDistributionKeys(t *testing.T, s *Store) {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `SELECT t.relname, i.relname,
			array_to_string(ARRAY(SELECT a.attname FROM unnest(x.indkey) k JOIN pg_attribute a
				ON a.attrelid = x.indrelid AND a.attnum = k ORDER BY a.attname), ',')
		FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_class t ON t.oid = x.indrelid
		WHERE x.indisunique AND t.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var table, index, cols string
		if err := rows.Scan(&table, &index, &cols); err != nil {
			t.Fatal(err)
		}
		col, ok := distributedTables[table]
		if !ok {
			continue
		}
		seen[table] = true
		if !slices.Contains(strings.Split(cols, ","), col) {
			t.Errorf("unique index %s of %s is on (%s), without the distribution column %s", index, table, cols, col)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for table := range distributedTables {
		if !seen[table] {
			t.Errorf("table %s has no primary key", table)
		}
	}
}

// A statement's tables, and whether it names one namespace.
var (
	statementTables = regexp.MustCompile(`(?i)\b(?:FROM|JOIN|INTO|UPDATE)\s+([a-z_]+)`)
	// namespace = $n, or the namespaces row by name; an IN list or a
	// column compared with another table's is not one namespace.
	namesNamespace = regexp.MustCompile(`(?i)\b(?:namespace|name)\s*=\s*\$\d+`)
	// an insert whose column list has the distribution column, of one
	// row (VALUES with one tuple, or SELECT of parameters).
	insertsNamespace = regexp.MustCompile(`(?is)^\s*INSERT INTO\s+[a-z_]+\s*\([^)]*\b(?:namespace|name)\b[^)]*\)\s*(?:VALUES\s*\([^()]*\)\s*(?:ON CONFLICT|RETURNING|$)|SELECT\s)`)
	// the CTE parts of a statement: each must name the namespace itself.
	ctePart = regexp.MustCompile(`(?is)(?:WITH|,)\s*[a-z_]+\s+AS\s+\(`)
)

// statementNamesNamespace reports whether query names one namespace
// for every distributed table it touches: each part of it (the
// statements of a WITH clause, and the main one) that reads or writes a
// distributed table compares its namespace with a parameter, or inserts
// one row that has it.
func statementNamesNamespace(query string) (bool, string) {
	for _, part := range statementParts(query) {
		var touched []string
		for _, m := range statementTables.FindAllStringSubmatch(part, -1) {
			if _, ok := distributedTables[strings.ToLower(m[1])]; ok {
				touched = append(touched, m[1])
			}
		}
		if len(touched) == 0 {
			continue
		}
		if !namesNamespace.MatchString(part) && !insertsNamespace.MatchString(part) {
			return false, strings.Join(touched, ",") + " in: " + strings.Join(strings.Fields(part), " ")
		}
	}
	return true, ""
}

// statementParts splits a statement at the parts of its WITH clause,
// by parentheses: what one part's parentheses hold belongs to it.
func statementParts(query string) []string {
	var parts []string
	rest := query
	for {
		loc := ctePart.FindStringIndex(rest)
		if loc == nil {
			break
		}
		depth, end := 1, -1
		for i := loc[1]; i < len(rest) && end < 0; i++ {
			switch rest[i] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					end = i
				}
			}
		}
		if end < 0 {
			break
		}
		parts = append(parts, rest[loc[1]:end])
		rest = rest[end+1:]
	}
	return append(parts, rest)
}

func TestStatementNamesNamespace(t *testing.T) {
	for _, c := range []struct {
		query string
		want  bool
	}{
		{`SELECT id FROM claims WHERE id = $1`, false},
		{`SELECT id FROM claims WHERE id = $1 AND namespace = $2`, true},
		{`UPDATE blobs SET state = 'x' WHERE id IN ($1, $2)`, false},
		{`INSERT INTO claim_releases (claim_id, consumer, namespace) VALUES ($1, $2, $3)`, true},
		{`INSERT INTO claim_labels (claim_id, namespace) VALUES ($1, $2), ($3, $4)`, false},
		{`SELECT name FROM tenants WHERE name = $1`, true},
		{`WITH c AS (UPDATE claims SET x = 1 WHERE id = $1), n AS (INSERT INTO namespaces (name) VALUES ($2) ON CONFLICT (name) DO NOTHING) SELECT 1`, false},
		{`WITH c AS (UPDATE claims SET x = 1 WHERE id = $1 AND namespace = $3), n AS (INSERT INTO namespaces (name) VALUES ($2) ON CONFLICT (name) DO NOTHING) SELECT 1`, true},
		{`INSERT INTO events (seq, namespace) VALUES ($1, $2)`, true},
	} {
		if got, why := statementNamesNamespace(c.query); got != c.want {
			t.Errorf("statementNamesNamespace(%q) = %v (%s), want %v", c.query, got, why, c.want)
		}
	}
}

// TestPostgresHotPathNamesNamespace runs the metadata operations of a
// put, a redeem, a release and a finish, as the engine calls them (with
// the reference's namespace as routing hint, meta.WithNamespace), and
// checks every statement they send: each names the one namespace for
// every distributed table it touches, so that a PostgreSQL distributed
// by namespace routes it to one shard.
func TestPostgresHotPathNamesNamespace(t *testing.T) {
	dsn := os.Getenv("TEST_DATABASE_URL")
	if dsn == "" {
		t.Skip("TEST_DATABASE_URL is not set: skipping the PostgreSQL check of the hot path's statements")
	}
	s := openPostgresStore(t, dsn)
	defer s.Close()
	var (
		mu   sync.Mutex
		sent []string
	)
	d := *s.d
	d.observe = func(q string) {
		mu.Lock()
		sent = append(sent, q)
		mu.Unlock()
	}
	s.d = &d
	round := 0
	check := func(op string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if round == 0 {
			// The first claim of a namespace creates its counter row
			// and draws its tenant allotment; the second shows the
			// path every later put takes.
			sent = nil
			return
		}
		if len(sent) == 0 {
			t.Errorf("%s sent no statement", op)
		}
		for _, q := range slices.Compact(sent) {
			if ok, why := statementNamesNamespace(q); !ok {
				t.Errorf("%s: a statement does not name its namespace: %s", op, why)
			}
		}
		sent = nil
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, tenant := range []meta.TenantQuota{{}, {Tenant: "acme", Bytes: 1 << 30, Claims: 1000}} {
		for j, labels := range []map[string]string{nil, {"k": "v"}} {
			for round = range 2 {
				ns := fmt.Sprintf("ns%d%d", i, j)
				ctx := meta.WithNamespace(context.Background(), ns)
				what := fmt.Sprintf("(tenant %q, %d labels)", tenant.Tenant, len(labels))
				cid, bid := fmt.Sprintf("c_%d%d%d", i, j, round), fmt.Sprintf("b_%d%d%d", i, j, round)
				cp := meta.CreatePendingParams{
					Claim: meta.Claim{ID: cid, Namespace: ns, BlobID: bid, State: meta.ClaimPending, Size: 100, ReservedBytes: 100,
						Labels: labels, CreatedAt: now, ExpiresAt: now.Add(time.Hour), DueAt: now.Add(time.Minute),
						DueReason: meta.ReasonNeverConfirmed, Consumers: 2},
					Blob: meta.Blob{ID: bid, Namespace: ns, Key: ns + "/" + bid, State: meta.BlobStaging,
						CreatedAt: now, StateAt: now, CollectAt: now.Add(time.Minute)},
					Now: now, QuotaBytes: 1 << 20, QuotaClaims: 100, Tenant: tenant,
				}
				if err := s.CreatePending(ctx, cp); err != nil {
					t.Fatalf("CreatePending %s: %v", what, err)
				}
				check("put: create pending " + what)
				if err := s.SaveBlockTable(ctx, cp.Blob.Key, []byte{1, 2}); err != nil {
					t.Fatal(err)
				}
				check("put: block table " + what)
				if _, err := s.Commit(ctx, meta.CommitParams{ClaimID: cid, BlobID: bid, Digest: "sha256:" + ns, Size: 100, StoredSize: 100,
					Now: now, DueAt: now.Add(time.Hour), DueReason: meta.ReasonExpired, Dedup: true, QuotaBytes: 1 << 20, Tenant: tenant}); err != nil {
					t.Fatalf("Commit %s: %v", what, err)
				}
				check("put: commit " + what)
				if _, _, _, err := s.ClaimWithBlob(ctx, cid); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Claim(ctx, cid); err != nil {
					t.Fatal(err)
				}
				check("redeem " + what)
				// Read receipts are written off the redeem path, in batches
				// of many namespaces (engine/reads.go): not checked here.
				if _, err := s.RecordReads(ctx, []meta.Read{{ClaimID: cid, At: now}}); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				sent = nil
				mu.Unlock()
				if _, err := s.Release(ctx, cid, "one", now); err != nil {
					t.Fatal(err)
				}
				check("release " + what)
				if _, _, err := s.FinishClaim(ctx, cid, meta.ReasonDeleted, now, false); err != nil {
					t.Fatal(err)
				}
				check("finish " + what)
			}
		}
	}
}
