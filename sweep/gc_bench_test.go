package sweep_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/filestore"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/sweep"
)

// BenchmarkGCCollect100k: 100,000 orphaned blobs past their grace period
// on SQLite with the file backend; one sweep collects them all (re-check
// against claims, deleting, object delete, deleted). Reports blobs/s.
//
//	go test -run '^$' -bench GCCollect100k -benchtime 1x ./sweep/
func BenchmarkGCCollect100k(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		dbPath := filepath.Join(dir, "meta.db")
		m, err := sqlmeta.Open(ctx, "sqlite:"+dbPath)
		if err != nil {
			b.Fatal(err)
		}
		seedOrphans(b, dbPath, filepath.Join(dir, "blobs"), n)
		bs, err := blob.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(dir, "blobs")))
		if err != nil {
			b.Fatal(err)
		}
		sw := sweep.New(sweep.Config{Disabled: true, PageSize: 1000}, m, bs, nil, clock.NewFake(t0.Add(time.Hour)), nil, nil)
		b.StartTimer()
		start := time.Now()
		res, err := sw.RunOnce(ctx, 0)
		elapsed := time.Since(start)
		if err != nil || res.BlobsCollected != n {
			b.Fatalf("collected %d of %d: %v", res.BlobsCollected, n, err)
		}
		b.ReportMetric(float64(n)/elapsed.Seconds(), "blobs/s")
		b.StopTimer()
		left, _ := os.ReadDir(filepath.Join(dir, "blobs", "ns"))
		if len(left) != 0 {
			b.Fatalf("%d objects left", len(left))
		}
		bs.Close()
		m.Close()
		b.StartTimer()
	}
}

// seedOrphans inserts n orphaned blobs due at t0 straight into the
// database (one transaction) and writes their objects.
func seedOrphans(b *testing.B, dbPath, blobDir string, n int) {
	b.Helper()
	if err := os.MkdirAll(filepath.Join(blobDir, "ns"), 0o755); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO namespaces (name) VALUES ('ns') ON CONFLICT DO NOTHING`); err != nil {
		b.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO blobs (id, namespace, digest, size, stored_size, object_key, state, refcount, created_at, state_at, collect_at)
		VALUES (?, 'ns', NULL, 64, 64, ?, 'orphaned', 0, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	obj := make([]byte, 64)
	for i := range n {
		id := fmt.Sprintf("b_bench%09d", i)
		ts := t0.UnixNano()
		if _, err := st.Exec(id, "ns/"+id, ts, ts, ts); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(blobDir, "ns", id), obj, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
