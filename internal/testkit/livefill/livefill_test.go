package livefill_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/livefill"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// TestFill: clones of a template claim are live claims to the engine:
// counted in the namespace's usage, listed, and the sample redeems with
// the template's bytes, each under its own id and object key. Runs on
// SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
func TestFill(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		fill(t, dir, "", "sqlite", filepath.Join(dir, "claimcheck.db"), false)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, _ := testsvc.Postgres(t)
		fill(t, t.TempDir(), dsn, "pgx", dsn, true)
	})
}

func fill(t *testing.T, dir, metadata, driver, dsn string, pg bool) {
	ctx := context.Background()
	cfg := engine.Config{Data: dir, Metadata: metadata, Sweeper: sweep.Config{Disabled: true}}
	store := enginetest.Open(t, cfg)
	const body = "the template's payload"
	tmpl, err := store.Put(ctx, "orders", strings.NewReader(body), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store.Close()

	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	const n, sample = 2500, 20
	before := indexes(t, db, pg)
	refs, err := livefill.Fill(ctx, db, tmpl, livefill.Options{N: n, Sample: sample, BlobDir: filepath.Join(dir, "blobs"), Postgres: pg, Batch: 100,
		DeferIndexes: true})
	if err != nil {
		t.Fatal(err)
	}
	// The deferred indexes are back as they were.
	if after := indexes(t, db, pg); !slices.Equal(before, after) || len(before) < 3 {
		t.Fatalf("indexes after the fill:\n%q\nwant\n%q", after, before)
	}
	db.Close()
	if len(refs) != sample {
		t.Fatalf("%d sampled refs, want %d", len(refs), sample)
	}

	store = enginetest.Open(t, cfg)
	info, err := store.Namespace(ctx, "orders")
	if err != nil || info.Usage.ActiveClaims != n+1 || info.Usage.UsedBytes != int64(n+1)*int64(len(body)) {
		t.Fatalf("namespace usage %+v, %v; want %d active claims", info.Usage, err, n+1)
	}
	listed, cursor := 0, ""
	for {
		page, err := store.List(ctx, "orders", claimcheck.ListOptions{Cursor: cursor, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		listed += len(page.Claims)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if listed != n+1 {
		t.Fatalf("listed %d claims, want %d", listed, n+1)
	}
	keys := map[string]bool{}
	for _, ref := range refs {
		if ref.ID == tmpl.ID || !claimcheck.ValidClaimID(ref.ID) {
			t.Fatalf("sampled ref id %q", ref.ID)
		}
		p, err := store.Redeem(ctx, ref)
		if err != nil {
			t.Fatalf("redeem %s: %v", ref.ID, err)
		}
		got, err := p.Bytes()
		p.Close()
		if err != nil || string(got) != body {
			t.Fatalf("redeem %s = %q, %v", ref.ID, got, err)
		}
		st, err := store.Stat(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if keys[st.Object] {
			t.Fatalf("two clones share the object %s", st.Object)
		}
		keys[st.Object] = true
	}
}

// indexes lists the definitions of the claims and blobs tables' indexes,
// sorted.
func indexes(t *testing.T, db *sql.DB, pg bool) []string {
	t.Helper()
	query := `SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ('claims', 'blobs')`
	if pg {
		query = `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename IN ('claims', 'blobs')`
	}
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var defs []string
	for rows.Next() {
		var def string
		if err := rows.Scan(&def); err != nil {
			t.Fatal(err)
		}
		defs = append(defs, def)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(defs)
	return defs
}
