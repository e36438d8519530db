package sqlmeta

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/metatest"
)

func openSQLiteStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "db", "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openBenchStore is the store a metadata benchmark runs on: SQLite, or
// PostgreSQL when TEST_DATABASE_URL is set and BENCH_POSTGRES=1.
func openBenchStore(b *testing.B) *Store {
	b.Helper()
	if url := os.Getenv("TEST_DATABASE_URL"); url != "" && os.Getenv("BENCH_POSTGRES") == "1" {
		s, err := Open(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	return openSQLiteStore(b)
}

func TestSQLiteConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Store { return openSQLiteStore(t) })
}

// TestPostgresConformance runs the suite against the database named by
// TEST_DATABASE_URL (a postgres:// DSN of a database the test may create
// schemas in), each subtest in a schema of its own.
func TestPostgresConformance(t *testing.T) {
	dsn := os.Getenv("TEST_DATABASE_URL")
	if dsn == "" {
		t.Skip("TEST_DATABASE_URL is not set: skipping the PostgreSQL run of the conformance suite")
	}
	metatest.Run(t, func(t *testing.T) meta.Store { return openPostgresStore(t, dsn) })
}

func openPostgresStore(t testing.TB, dsn string) *Store {
	t.Helper()
	return openPostgresStoreThrough(t, dsn, 0)
}

// openPostgresStoreThrough is openPostgresStore with the migrations up to
// through only (0: all).
func openPostgresStoreThrough(t testing.TB, dsn string, through int64) *Store {
	t.Helper()
	s, err := open(context.Background(), postgresSchema(t, dsn), through)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// postgresSchema creates a schema of its own for the test (dropped at its
// end) and returns dsn with that schema as its search path.
func postgresSchema(t testing.TB, dsn string) string {
	t.Helper()
	ctx := context.Background()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schema := "metatest_" + strings.ToLower(rand.Text())
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return
		}
		defer db.Close()
		if _, err := db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestSQLiteWriteCancelledBetweenStatements: a write transaction's
// statements run without the request's cancellation on SQLite (runTx),
// yet a cancellation in the middle still commits nothing and is reported
// as the context's error.
func TestSQLiteWriteCancelledBetweenStatements(t *testing.T) {
	s := openSQLiteStore(t)
	defer s.Close()
	for _, wait := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		first, second := "first-"+strconv.FormatBool(wait), "second-"+strconv.FormatBool(wait)
		err := s.write(ctx, func(q *txq) error {
			if _, err := q.exec(`INSERT INTO tenants (name) VALUES (?)`, first); err != nil {
				return err
			}
			cancel()
			if wait { // database/sql's rollback has run: the next statement fails
				time.Sleep(50 * time.Millisecond)
			}
			_, err := q.exec(`INSERT INTO tenants (name) VALUES (?)`, second)
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("wait %v: write = %v, want context.Canceled", wait, err)
		}
		var n int
		if err := s.w.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM tenants WHERE name IN (?, ?)`, first, second).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("wait %v: %d rows of the cancelled transaction committed", wait, n)
		}
	}
}

func TestOpenDSN(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, dsn := range []string{
		"sqlite:" + filepath.Join(dir, "a", "b", "one.db"),
		"sqlite://" + filepath.Join(dir, "two.db"),
		"sqlite::memory:",
	} {
		s, err := Open(ctx, dsn)
		if err != nil {
			t.Errorf("Open(%q): %v", dsn, err)
			continue
		}
		if err := s.Ping(ctx); err != nil {
			t.Errorf("Ping(%q): %v", dsn, err)
		}
		s.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "b", "one.db")); err != nil {
		t.Errorf("database file not created: %v", err)
	}
	for _, dsn := range []string{"", "mysql://x", "sqlite:", "sqlite:/tmp/a?b.db"} {
		if s, err := Open(ctx, dsn); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", dsn)
		}
	}
}

func TestSQLitePragmas(t *testing.T) {
	s := openSQLiteStore(t)
	defer s.Close()
	ctx := context.Background()
	for _, db := range []*sql.DB{s.w, s.r} {
		var mode string
		var fk, sync, busy int
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if err := s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || fk != 1 || busy == 0 || sync != 1 {
			t.Errorf("journal_mode=%s foreign_keys=%d busy_timeout=%d synchronous=%d", mode, fk, busy, sync)
		}
	}
	if _, err := s.r.ExecContext(ctx, "INSERT INTO namespaces (name) VALUES ('x')"); err == nil {
		t.Error("the read pool accepted a write")
	}
}

func TestMigrateTwice(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, dsn)
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	defer s.Close()
	var n int
	if err := s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	ms, _ := loadMigrations()
	if n != len(ms) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(ms))
	}

	// A database from a newer program is refused.
	if _, err := s.w.ExecContext(ctx, "INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(ctx, dsn); err == nil {
		s.Close()
		t.Error("Open accepted a database with a newer schema")
	}
}

func TestRebind(t *testing.T) {
	for q, want := range map[string]string{
		"UPDATE t SET a = ?, b = ? WHERE id IN (?, ?)": "UPDATE t SET a = $1, b = $2 WHERE id IN ($3, $4)",
		"SELECT 1":                       "SELECT 1",
		"?":                              "$1",
		"??":                             "$1$2",
		"SELECT ?,":                      "SELECT $1,",
		"VALUES (?,?,?,?,?,?,?,?,?,?,?)": "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)",
	} {
		if got := postgresDialect.rebind(q); got != want {
			t.Errorf("rebind(%q) = %q, want %q", q, got, want)
		}
	}
	if q := "SELECT ?"; sqliteDialect.rebind(q) != q {
		t.Errorf("sqlite rebind changed the query")
	}
}

// TestBeginCollectRepairsDrift makes the drift the refcount and state can
// only reach through a bug or a crash elsewhere — an orphaned blob that a
// live claim still points at — and checks that collection re-confirms
// against the claims, puts the blob back to committed and recounts it.
func TestBeginCollectRepairsDrift(t *testing.T) {
	ctx := context.Background()
	s := openSQLiteStore(t)
	defer s.Close()
	now := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
	p := meta.CreatePendingParams{
		Claim: meta.Claim{ID: "c1", Namespace: "ns", BlobID: "b1", State: meta.ClaimPending, ReservedBytes: 10,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), DueAt: now.Add(time.Minute), DueReason: meta.ReasonNeverConfirmed},
		Blob: meta.Blob{ID: "b1", Namespace: "ns", Key: "ns/b1", State: meta.BlobStaging, CollectAt: now.Add(time.Minute)},
		Now:  now,
	}
	if err := s.CreatePending(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, meta.CommitParams{ClaimID: "c1", BlobID: "b1", Digest: "sha256:00", Size: 10, Now: now,
		DueAt: now.Add(time.Hour), DueReason: meta.ReasonExpired}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `UPDATE blobs SET state = 'orphaned', refcount = 0, collect_at = ? WHERE id = 'b1'`, now.UnixNano()); err != nil {
		t.Fatal(err)
	}
	got, err := s.BeginCollect(ctx, now, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("BeginCollect returned %v although claim c1 references b1", got)
	}
	b, err := s.Blob(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if b.State != meta.BlobCommitted || b.Refcount != 1 || !b.CollectAt.IsZero() {
		t.Errorf("drifted blob after BeginCollect = %+v, want committed, refcount 1, no collect_at", b)
	}
}

func TestWriteRetries(t *testing.T) {
	s := openSQLiteStore(t)
	defer s.Close()
	runs := 0
	err := s.write(context.Background(), func(q *txq) error {
		runs++
		if _, err := q.exec(`INSERT INTO namespaces (name) VALUES (?)`, "n"+strconv.Itoa(runs)); err != nil {
			return err
		}
		if runs < 3 {
			return errRetry
		}
		return nil
	})
	if err != nil || runs != 3 {
		t.Fatalf("write: err=%v after %d runs, want success after 3", err, runs)
	}
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM namespaces`).Scan(&n); err != nil || n != 1 {
		t.Errorf("namespaces after two rolled-back attempts: %d (%v), want 1", n, err)
	}
	runs = 0
	err = s.write(context.Background(), func(q *txq) error { runs++; return errRetry })
	if !errors.Is(err, errRetry) || runs != maxAttempts {
		t.Errorf("write that always asks for a retry: err=%v after %d runs, want errRetry after %d", err, runs, maxAttempts)
	}
}

// TestLiveClaimIndexUsed checks that SQLite answers "which live claims
// hold this blob?" from the partial index claims_live_blob (migration
// 0019) in every statement that asks it. Through the full index on
// claims (blob_id) the question walked every finished claim the blob ever
// had, and a finish on a blob kept alive by dedup grew slower with its
// history (docs/PERFORMANCE-HISTORY.md, BenchmarkFinishLongLivedBlob). A change to
// the condition's wording that SQLite no longer matches to the index's
// WHERE clause fails here.
func TestLiveClaimIndexUsed(t *testing.T) {
	s := openSQLiteStore(t)
	defer s.Close()
	for name, query := range map[string]string{
		"not exists": `UPDATE blobs SET state = 'orphaned' WHERE state = 'committed' AND id IN (?, ?)
			AND NOT EXISTS (SELECT 1 ` + liveClaimsOfBlob + `)`,
		"recount":   `UPDATE blobs SET refcount = (SELECT COUNT(*) ` + liveClaimsOfBlob + `) WHERE id IN (?, ?)`,
		"live refs": liveRefsSQL(2),
	} {
		rows, err := s.w.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, "a", "b")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		var claims []string
		for _, step := range plan {
			if strings.Contains(step, " claims ") {
				claims = append(claims, step)
			}
		}
		if len(claims) != 1 || !strings.Contains(claims[0], "USING INDEX claims_live_blob") {
			t.Errorf("%s: claims are not read through claims_live_blob; plan: %q", name, plan)
		}
	}
}
