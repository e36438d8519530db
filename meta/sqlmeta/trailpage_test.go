package sqlmeta

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/metatest"
)

// TestTrailListingPageCost measures what one page (limit 100) of a
// namespace's events costs when its claims are compacted (their events in
// trails, ADR 0266) against the same history as rows, side by side on two
// stores built alike (docs/PERFORMANCE.md, "Audit trails folded into
// tombstones"). A claim is put every second and lives `live` seconds
// (read a second after its put, then deleted), so about `live` claims are
// live around any cursor: the trails a page reads besides its own. The
// whole listing is walked in pages, the two stores in turn, and the mean
// time per page is logged. It runs when TRAIL_PAGE_CLAIMS (claims per
// store) is set, on SQLite, and on PostgreSQL with TEST_DATABASE_URL.
func TestTrailListingPageCost(t *testing.T) {
	n := metatest.MeasuredCount(t, "TRAIL_PAGE_CLAIMS", 0)
	opens := map[string]func() *Store{"sqlite": func() *Store { return openSQLiteStore(t) }}
	if dsn := os.Getenv("TEST_DATABASE_URL"); dsn != "" {
		opens["postgres"] = func() *Store { return openPostgresStore(t, dsn) }
	}
	for _, db := range []string{"sqlite", "postgres"} {
		open := opens[db]
		if open == nil {
			continue
		}
		for _, live := range []int{10, 1000} {
			t.Run(fmt.Sprintf("%s/live=%d", db, live), func(t *testing.T) {
				rows, trails := open(), open()
				defer rows.Close()
				defer trails.Close()
				ctx := claimcheck.WithActor(context.Background(), "key_0123456789")
				base := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
				for _, s := range []*Store{rows, trails} {
					spacedLives(t, s, ctx, base, n, time.Duration(live)*time.Second)
				}
				for {
					k, err := trails.CompactHistory(ctx, base.Add(time.Duration(n+live+10)*time.Second), 1000)
					if err != nil {
						t.Fatal(err)
					}
					if k < 1000 {
						break
					}
				}
				walk := func(s *Store) metatest.PageWalk {
					return func(after int64) (int, int64, error) {
						page, err := s.NamespaceEvents(ctx, "orders", time.Time{}, after, 100)
						if err != nil || len(page) == 0 {
							return 0, 0, err
						}
						return len(page), page[len(page)-1].Seq, nil
					}
				}
				per, events := metatest.SideBySidePages(t, 3, walk(rows), walk(trails))
				if events[0] != events[1] || events[0] != 3*4*n {
					t.Fatalf("listed %d events from rows and %d from trails, want %d each", events[0], events[1], 3*4*n)
				}
				perRows, perTrails := per[0], per[1]
				t.Logf("%s, %d claims, %d live around a cursor: a page of 100 events costs %v from rows, %v from trails (%.2f×)",
					db, n, live, perRows, perTrails, float64(perTrails)/float64(perRows))
			})
		}
	}
}

// spacedLives puts n claims of namespace orders one a second, each read
// a second after its put and deleted life after it: created, redeemed,
// first_redeemed, deleted.
func spacedLives(t *testing.T, s *Store, ctx context.Context, base time.Time, n int, life time.Duration) {
	t.Helper()
	for i := range n {
		now := base.Add(time.Duration(i) * time.Second)
		cid, bid := historyClaimID(i), fmt.Sprintf("b_-%021d", i)
		err := s.CreatePending(ctx, meta.CreatePendingParams{
			Claim: meta.Claim{ID: cid, Namespace: "orders", BlobID: bid, State: meta.ClaimPending,
				Size: 1024, ReservedBytes: 1024, CreatedAt: now, ExpiresAt: now.Add(life + time.Hour),
				DueAt: now.Add(time.Minute), DueReason: meta.ReasonNeverConfirmed, GracePeriod: time.Minute},
			Blob: meta.Blob{ID: bid, Namespace: "orders", Key: "orders/" + bid, State: meta.BlobStaging,
				CreatedAt: now, StateAt: now, CollectAt: now.Add(time.Minute)},
			Now: now,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(ctx, meta.CommitParams{ClaimID: cid, BlobID: bid, Digest: fmt.Sprintf("sha256:%064d", i),
			Size: 1024, StoredSize: 1024, Now: now, DueAt: now.Add(life + time.Hour), DueReason: meta.ReasonExpired}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordReads(ctx, []meta.Read{{ClaimID: cid, At: now.Add(time.Second), Actor: "key_0123456789"}}); err != nil {
			t.Fatal(err)
		}
		if i >= int(life/time.Second) {
			// The claim put life ago finishes now.
			j := i - int(life/time.Second)
			if _, _, err := s.FinishClaim(ctx, historyClaimID(j), meta.ReasonDeleted, now.Add(time.Second/2), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	end := base.Add(time.Duration(n) * time.Second)
	for j := max(0, n-int(life/time.Second)); j < n; j++ {
		if _, _, err := s.FinishClaim(ctx, historyClaimID(j), meta.ReasonDeleted, end.Add(time.Duration(j)*time.Millisecond), false); err != nil {
			t.Fatal(err)
		}
	}
}
