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
	"claims":           "namespace",
	"blobs":            "namespace",
	"uploads":          "namespace",
	"upload_progress":  "namespace",
	"claim_labels":     "namespace",
	"claim_releases":   "namespace",
	"object_blocks":    "namespace",
	"namespaces":       "name",
	"events":           "namespace",
	"claim_tombstones": "namespace",
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
				// The read receipt, written off the redeem path on a
				// context of its own (engine/reads.go): the read names
				// its claim's namespace. An instant of its own: an event
				// number already taken would send the receipt to its
				// transaction, a path this test does not take.
				readAt := now.Add(time.Duration(1+i*4+j*2+round) * time.Second)
				if skipped, err := s.RecordReads(context.Background(), []meta.Read{{ClaimID: cid, Namespace: ns, At: readAt}}); err != nil || len(skipped) != 0 {
					t.Fatalf("RecordReads %s: skipped %v, %v", what, skipped, err)
				}
				check("read receipt " + what)
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
	// A batch of read receipts over two namespaces, interleaved as the
	// engine queues them: each namespace's reads go in statements that
	// name it.
	round = 1
	var ids []string
	for k, tenant := range []meta.TenantQuota{{}, {Tenant: "acme", Bytes: 1 << 30, Claims: 1000}} {
		ns := fmt.Sprintf("ns%d0", k)
		ctx := meta.WithNamespace(context.Background(), ns)
		cid, bid := fmt.Sprintf("c_r%d", k), fmt.Sprintf("b_r%d", k)
		if err := s.CreatePending(ctx, meta.CreatePendingParams{
			Claim: meta.Claim{ID: cid, Namespace: ns, BlobID: bid, State: meta.ClaimPending, Size: 100, ReservedBytes: 100,
				CreatedAt: now, ExpiresAt: now.Add(time.Hour), DueAt: now.Add(time.Minute), DueReason: meta.ReasonNeverConfirmed},
			Blob: meta.Blob{ID: bid, Namespace: ns, Key: ns + "/" + bid, State: meta.BlobStaging,
				CreatedAt: now, StateAt: now, CollectAt: now.Add(time.Minute)},
			Now: now, QuotaBytes: 1 << 20, QuotaClaims: 100, Tenant: tenant,
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(ctx, meta.CommitParams{ClaimID: cid, BlobID: bid, Digest: "sha256:r" + ns, Size: 100, StoredSize: 100,
			Now: now, DueAt: now.Add(time.Hour), DueReason: meta.ReasonExpired, QuotaBytes: 1 << 20, Tenant: tenant}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cid)
	}
	mu.Lock()
	sent = nil
	mu.Unlock()
	at := now.Add(time.Minute)
	skipped, err := s.RecordReads(context.Background(), []meta.Read{
		{ClaimID: ids[0], Namespace: "ns00", At: at},
		{ClaimID: ids[1], Namespace: "ns10", At: at.Add(1)},
		{ClaimID: ids[0], Namespace: "ns00", At: at.Add(2)},
	})
	if err != nil || len(skipped) != 0 {
		t.Fatalf("RecordReads over two namespaces: skipped %v, %v", skipped, err)
	}
	mu.Lock()
	if n := len(sent); n < 2 {
		t.Errorf("read receipts over two namespaces sent %d statements, want one per namespace at least", n)
	}
	mu.Unlock()
	check("read receipts over two namespaces")
	for k, want := range []int64{2, 1} {
		if c, err := s.Claim(context.Background(), ids[k]); err != nil || c.Reads != want {
			t.Errorf("claim %s: reads %d, %v; want %d", ids[k], c.Reads, err, want)
		}
	}
}

// TestDistributionKeysMigration: migrations 0060 and 0061 run on a store
// with data. The namespace is copied into the rows that did not carry
// it, the keys change (PostgreSQL), and the claims work as before.
func TestDistributionKeysMigration(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := open(t.Context(), "sqlite:"+t.TempDir()+"/meta.db", 59)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		testDistributionKeysMigration(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("TEST_DATABASE_URL")
		if dsn == "" {
			t.Skip("TEST_DATABASE_URL is not set: skipping the PostgreSQL run of the migration")
		}
		s := openPostgresStoreThrough(t, dsn, 59)
		defer s.Close()
		testDistributionKeysMigration(t, s)
		checkDistributionKeys(t, s)
	})
}

func testDistributionKeysMigration(t *testing.T, s *Store) {
	ctx := t.Context()
	// As a store of the schema before 0060 holds them: a claim with a
	// release, an upload with its progress, a block table.
	for _, stmt := range []string{
		`INSERT INTO namespaces (name, used_bytes, reserved_bytes, active_claims, pending_claims, tenant) VALUES ('ns', 10, 10, 1, 1, 'acme')`,
		`INSERT INTO blobs (id, namespace, digest, dedupable, size, object_key, state, refcount, created_at, state_at)
			VALUES ('b_1', 'ns', 'sha256:x', 1, 10, 'ns/b_1', 'committed', 1, 1, 1)`,
		`INSERT INTO claims (id, namespace, blob_id, state, size, created_at, expires_at, due_at, consumers)
			VALUES ('c_1', 'ns', 'b_1', 'active', 10, 1, 9000000000000000000, 9000000000000000000, 2)`,
		`INSERT INTO claim_releases (claim_id, consumer, released_at, seq) VALUES ('c_1', 'one', 2, 1)`,
		`INSERT INTO claim_labels (claim_id, namespace, label_key, label_value, created_at) VALUES ('c_1', 'ns', 'k', 'v', 1)`,
		`INSERT INTO blobs (id, namespace, size, object_key, state, refcount, created_at, state_at, collect_at)
			VALUES ('b_2', 'ns', 10, 'ns/b_2', 'staging', 1, 1, 1, 9000000000000000000)`,
		`INSERT INTO claims (id, namespace, blob_id, state, reserved_bytes, created_at, expires_at, due_at)
			VALUES ('c_2', 'ns', 'b_2', 'pending', 10, 1, 9000000000000000000, 9000000000000000000)`,
		`INSERT INTO uploads (claim_id, namespace, blob_id, object_key, size, digest, created_at)
			VALUES ('c_2', 'ns', 'b_2', 'ns/b_2', 10, 'sha256:y', 1)`,
		`INSERT INTO upload_progress (claim_id, received, updated_at) VALUES ('c_2', 4, 1)`,
		`INSERT INTO object_blocks (object_key, sums) VALUES ('ns/b_1', '00')`,
		`INSERT INTO object_blocks (object_key, sums) VALUES ('gone/b_9', '00')`,
	} {
		if _, err := s.w.ExecContext(ctx, s.d.rebind(stmt)); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := s.migrate(ctx, 0); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	for _, c := range []struct{ query, want string }{
		{`SELECT namespace FROM claim_releases WHERE claim_id = 'c_1'`, "ns"},
		{`SELECT namespace FROM upload_progress WHERE claim_id = 'c_2'`, "ns"},
		{`SELECT namespace FROM object_blocks WHERE object_key = 'ns/b_1'`, "ns"},
		{`SELECT namespace FROM object_blocks WHERE object_key = 'gone/b_9'`, ""},
		{`SELECT allot_key FROM namespaces WHERE name = 'ns'`, ""},
	} {
		var got string
		if err := s.r.QueryRowContext(ctx, c.query).Scan(&got); err != nil || got != c.want {
			t.Errorf("%s = %q (%v), want %q", c.query, got, err, c.want)
		}
	}
	// The claims work as before, by id alone and with their namespace.
	hinted := meta.WithNamespace(ctx, "ns")
	now := time.Unix(0, 3)
	c, err := s.Claim(ctx, "c_1")
	if err != nil || !slices.Equal(c.ReleasedBy, []string{"one"}) {
		t.Fatalf("claim after the migration: %+v, %v", c, err)
	}
	if _, err := s.Claim(meta.WithNamespace(ctx, "other"), "c_1"); err == nil {
		t.Errorf("claim c_1 found in namespace other")
	}
	if c, err = s.Release(hinted, "c_1", "two", now); err != nil || len(c.ReleasedBy) != 2 {
		t.Fatalf("release after the migration: %+v, %v", c, err)
	}
	if table, ok, err := s.BlockTable(ctx, "ns/b_1"); err != nil || !ok || len(table) != 1 {
		t.Errorf("block table after the migration: %v %v %v", table, ok, err)
	}
	if _, done, err := s.FinishClaim(hinted, "c_2", meta.ReasonAborted, now, false); err != nil || !done {
		t.Fatalf("finish of the upload's claim after the migration: %v %v", done, err)
	}
	if _, _, _, err := s.ClaimWithBlob(hinted, "c_1"); err != nil {
		t.Fatalf("claim with blob after the migration: %v", err)
	}
	// A put in the namespace of a tenant with a quota draws its allotment.
	if err := s.CreatePending(hinted, meta.CreatePendingParams{
		Claim: meta.Claim{ID: "c_3", Namespace: "ns", BlobID: "b_3", State: meta.ClaimPending, Size: 5, ReservedBytes: 5,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), DueAt: now.Add(time.Minute), DueReason: meta.ReasonNeverConfirmed},
		Blob: meta.Blob{ID: "b_3", Namespace: "ns", Key: "ns/b_3", State: meta.BlobStaging, CreatedAt: now, StateAt: now,
			CollectAt: now.Add(time.Minute)},
		Now: now, Tenant: meta.TenantQuota{Tenant: "acme", Bytes: 20},
	}); err != nil {
		t.Fatalf("put after the migration: %v", err)
	}
	var allot int64
	if err := s.r.QueryRowContext(ctx, `SELECT allot_bytes FROM namespaces WHERE name = 'ns'`).Scan(&allot); err != nil || allot < 15 || allot > 20 {
		t.Errorf("allotment of ns after a put of 5 bytes with 10 in use of 20: %d (%v), want 15 to 20", allot, err)
	}
}
