package sqlmeta

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// TestNamespaceCounterBloat measures the size of PostgreSQL's namespaces
// table, whose one row every put and finish updates, after N puts by four
// writers into one namespace (docs/PERFORMANCE.md, "Small history"). It is
// a measurement, not a check: the size depends on when autovacuum runs
// and on how long other sessions' snapshots keep old versions of the row
// visible, so it runs only when COUNTER_PUTS sets N, and needs
// TEST_DATABASE_URL.
func TestNamespaceCounterBloat(t *testing.T) {
	dsn := os.Getenv("TEST_DATABASE_URL")
	v := os.Getenv("COUNTER_PUTS")
	if dsn == "" || v == "" {
		t.Skip("COUNTER_PUTS and TEST_DATABASE_URL are not both set: measuring PostgreSQL's counter table is on demand")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("COUNTER_PUTS=%q: want a positive number", v)
	}
	s := openPostgresStore(t, dsn)
	defer s.Close()
	putMany(t, s, 0, n)
	var size, dead int64
	if err := s.w.QueryRow(`SELECT pg_relation_size('namespaces'),
		COALESCE((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = to_regclass('namespaces')), 0)`).Scan(&size, &dead); err != nil {
		t.Fatal(err)
	}
	t.Logf("namespaces table after %d puts by 4 writers: %d bytes, %d dead versions counted", n, size, dead)
}

// putMany puts claims from..to-1 into namespace "hot", four writers at
// once, each claim a pending row and its commit (two counter updates).
func putMany(t *testing.T, s *Store, from, to int) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := from + w; i < to; i += 4 {
				cid, bid := fmt.Sprintf("cc_%022d", i), fmt.Sprintf("b_%022d", i)
				err := s.CreatePending(ctx, meta.CreatePendingParams{
					Claim: meta.Claim{ID: cid, Namespace: "hot", BlobID: bid, State: meta.ClaimPending, Size: 1024,
						ReservedBytes: 1024, CreatedAt: now, ExpiresAt: now.Add(time.Hour), DueAt: now.Add(time.Minute),
						DueReason: meta.ReasonNeverConfirmed, Consumers: 1},
					Blob: meta.Blob{ID: bid, Namespace: "hot", Key: "hot/" + bid, State: meta.BlobStaging,
						CreatedAt: now, StateAt: now, CollectAt: now.Add(time.Minute)},
					Now: now,
				})
				if err == nil {
					_, err = s.Commit(ctx, meta.CommitParams{ClaimID: cid, BlobID: bid, Digest: fmt.Sprintf("sha256:%064d", i),
						Size: 1024, StoredSize: 1024, Now: now, DueAt: now.Add(time.Hour), DueReason: meta.ReasonExpired})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
