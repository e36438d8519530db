package sqlmeta

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// historyTables are the tables that hold what a finished claim keeps:
// its row (or tombstone), its blob's row, its events and the rows that
// hang off a claim. On PostgreSQL the partitions of a partitioned table
// are counted through the partition tree.
var historyTables = []string{"claims", "claim_tombstones", "blobs", "events", "claim_labels", "claim_releases", "uploads", "upload_progress"}

// TestHistoryBytesPerClaim measures the bytes a finished claim keeps in
// history (tables plus their indexes, docs/PERFORMANCE.md, "Small
// history"): N claims live a typical life through the metadata store (a
// put with two labels, one read, a finish, the collection of the blob),
// then the store's size is taken after a full vacuum, before and after
// the history compaction, and divided by N. HISTORY_BYTES_CLAIMS sets N
// (default 2,000; 200 under -short). It runs on SQLite, and on PostgreSQL
// when TEST_DATABASE_URL and HISTORY_BYTES_CLAIMS are both set: there a
// vacuum cannot reclaim rows that any other session's snapshot on the
// server may still see, so the figure is only meaningful on a server
// with no other long transactions, and is taken on demand.
func TestHistoryBytesPerClaim(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	v := os.Getenv("HISTORY_BYTES_CLAIMS")
	if v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("HISTORY_BYTES_CLAIMS=%q: want a positive number", v)
		}
	}
	t.Run("sqlite", func(t *testing.T) { measureHistoryBytes(t, openSQLiteStore(t), n) })
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("TEST_DATABASE_URL")
		if dsn == "" || v == "" {
			t.Skip("TEST_DATABASE_URL and HISTORY_BYTES_CLAIMS are not both set: measuring SQLite only")
		}
		measureHistoryBytes(t, openPostgresStore(t, dsn), n)
	})
}

func measureHistoryBytes(t *testing.T, s *Store, n int) {
	defer s.Close()
	ctx := claimcheck.WithActor(context.Background(), "key_0123456789")
	base := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	// One claim created first keeps the namespace row and the tables'
	// first pages out of the difference.
	lifeOfClaims(t, s, ctx, base, 0, 1)
	empty := historySize(t, s)
	lifeOfClaims(t, s, ctx, base, 1, n+1)
	finished := historySize(t, s)
	t.Logf("%s: %d finished claims keep %.0f bytes each as finished rows", s.d.name, n, float64(finished-empty)/float64(n))
	var compacted int
	for {
		k, err := s.CompactHistory(ctx, base.Add(48*time.Hour), 1000)
		if err != nil {
			t.Fatal(err)
		}
		compacted += k
		if k < 1000 {
			break
		}
	}
	if compacted != n+1 {
		t.Fatalf("CompactHistory compacted %d claims, want %d", compacted, n+1)
	}
	small := historySize(t, s)
	before, after := float64(finished-empty)/float64(n), float64(small-empty)/float64(n)
	t.Logf("%s, %d finished claims: %.0f bytes each as finished rows, %.0f compacted (%.2f×)", s.d.name, n, before, after, after/before)
	// The target of a fleet's history (docs/PERFORMANCE.md, "Audit
	// trails folded into tombstones"): its events are in the tombstone's
	// trail (ADR 0266). A size, not a timing.
	if after > 400 {
		t.Errorf("a compacted finished claim keeps %.0f bytes, want at most 400", after)
	}
	// Every one still answers gone with its reason.
	for _, i := range []int{1, n / 2, n} {
		id := historyClaimID(i)
		c, err := s.Claim(ctx, id)
		if err != nil || c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonExpired || c.Namespace != "orders" {
			t.Errorf("Claim(%s) after compaction = %+v, %v; want deleted, expired, in orders", id, c, err)
		}
		if evs, err := s.ClaimEvents(ctx, id, 0, 10); err != nil || len(evs) != 4 {
			t.Errorf("ClaimEvents(%s) after compaction = %d events, %v; want 4", id, len(evs), err)
		}
	}
	// No claim event is a row any more: each is in its claim's trail.
	var rows int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM events WHERE claim_id <> ''`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d event rows of claims left after compaction (%v), want none: they are in the trails", rows, err)
	}
}

func historyClaimID(i int) string { return fmt.Sprintf("cc_-%021d", i) }

// lifeOfClaims runs claims from..to-1 through a put, a read, a finish
// at max_age and the collection of their blobs.
func lifeOfClaims(t *testing.T, s *Store, ctx context.Context, base time.Time, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		now := base.Add(time.Duration(i) * time.Millisecond)
		cid, bid := historyClaimID(i), fmt.Sprintf("b_-%021d", i)
		err := s.CreatePending(ctx, meta.CreatePendingParams{
			Claim: meta.Claim{ID: cid, Namespace: "orders", BlobID: bid, State: meta.ClaimPending,
				Size: 1024, ReservedBytes: 1024, ContentType: "application/json",
				Labels:    map[string]string{"tenant": "acme", "kind": "invoice"},
				CreatedAt: now, ExpiresAt: now.Add(time.Hour), DueAt: now.Add(time.Minute),
				DueReason: meta.ReasonNeverConfirmed, GracePeriod: time.Minute, Consumers: 1},
			Blob: meta.Blob{ID: bid, Namespace: "orders", Key: "orders/" + bid, State: meta.BlobStaging,
				CreatedAt: now, StateAt: now, CollectAt: now.Add(time.Minute)},
			Now: now,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(ctx, meta.CommitParams{ClaimID: cid, BlobID: bid,
			Digest: fmt.Sprintf("sha256:%064d", i), Size: 1024, StoredSize: 600, Compression: "zstd",
			Now: now, DueAt: now.Add(time.Hour), DueReason: meta.ReasonExpired}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordReads(ctx, []meta.Read{{ClaimID: cid, Namespace: "orders", At: now.Add(time.Second), Actor: "key_0123456789"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Past the claims' max_age, then past their blobs' grace period.
	end := base.Add(time.Duration(to)*time.Millisecond + time.Hour)
	collect := end.Add(2 * time.Minute)
	sweeper := claimcheck.WithActor(ctx, meta.ActorSweeper)
	for {
		rs, err := s.FinishDueClaims(sweeper, end, 250)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			break
		}
	}
	for {
		bs, err := s.BeginCollect(sweeper, collect, 250, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) == 0 {
			break
		}
		ids := make([]string, len(bs))
		for i, b := range bs {
			ids[i] = b.ID
		}
		if err := s.FinishCollect(sweeper, ids, collect); err != nil {
			t.Fatal(err)
		}
	}
}

// historySize is the bytes of the history tables and their indexes after
// a full vacuum, so that space freed by deleted rows is not counted.
func historySize(t *testing.T, s *Store) int64 {
	t.Helper()
	ctx := context.Background()
	var total int64
	if s.d.name == "sqlite" {
		if _, err := s.w.ExecContext(ctx, `VACUUM`); err != nil {
			t.Fatal(err)
		}
		for _, table := range historyTables {
			var n int64
			// dbstat counts the pages of a table and of its indexes
			// (tbl_name is the table an index belongs to).
			err := s.w.QueryRowContext(ctx, `SELECT COALESCE(SUM(pgsize), 0) FROM dbstat
				WHERE name IN (SELECT name FROM sqlite_schema WHERE tbl_name = ?)`, table).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			if os.Getenv("HISTORY_BYTES_TABLES") != "" {
				t.Logf("%s: %d bytes", table, n)
			}
			total += n
		}
		return total
	}
	for _, table := range historyTables {
		var exists bool
		if err := s.w.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if !exists {
			continue
		}
		if _, err := s.w.ExecContext(ctx, `VACUUM FULL `+table); err != nil {
			t.Fatal(err)
		}
		var n int64
		// A plain table has no partition tree; a partitioned one's own
		// size is zero, its partitions hold the rows.
		err := s.w.QueryRowContext(ctx, `SELECT pg_total_relation_size(to_regclass($1)) +
			COALESCE((SELECT SUM(pg_total_relation_size(relid)) FROM pg_partition_tree(to_regclass($1))
				WHERE relid <> to_regclass($1)), 0)`, table).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("HISTORY_BYTES_TABLES") != "" {
			t.Logf("%s: %d bytes", table, n)
		}
		total += n
	}
	return total
}
