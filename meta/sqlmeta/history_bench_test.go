package sqlmeta

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// BenchmarkFinishLongLivedBlob measures the life of one claim on a blob
// that dedup has kept alive for a long time: a digest-first put that hits
// the blob, then the finish that asks whether any live claim still holds
// it. history is the number of finished claims that once pointed at the
// blob. index=live is the schema as migrated (the partial index of live
// claims, migration 0019, beside the full index on claims (blob_id));
// index=all drops the partial index, so the question goes through the full
// index as it did before 0019, and the two run side by side in one binary.
// The finish should cost the same whatever the history.
func BenchmarkFinishLongLivedBlob(b *testing.B) {
	for _, index := range []string{"live", "all"} {
		for _, history := range []int{0, 100_000} {
			b.Run(fmt.Sprintf("index=%s/history=%d", index, history), func(b *testing.B) {
				benchFinishLongLivedBlob(b, index, history)
			})
		}
	}
}

func benchFinishLongLivedBlob(b *testing.B, index string, history int) {
	ctx := context.Background()
	s := openSQLiteStore(b)
	defer s.Close()
	base := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
	const digest = "sha256:hot"
	seedBlobHistory(b, s, base, digest, history)
	if index == "all" {
		err := s.write(ctx, func(q *txq) error {
			_, err := q.exec(`DROP INDEX claims_live_blob`)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}

	now := base.Add(time.Hour)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("live%09d", i)
		_, hit, err := s.CommitExisting(ctx, meta.CommitExistingParams{
			Digest: digest, Now: now,
			Claim: meta.Claim{ID: id, Namespace: "bench", Size: 1000, CreatedAt: now,
				ExpiresAt: now.Add(time.Hour), DueAt: now.Add(time.Hour), DueReason: meta.ReasonExpired,
				GracePeriod: time.Hour},
		})
		if err != nil || !hit {
			b.Fatalf("put %d: hit=%v, %v", i, hit, err)
		}
		res, done, err := s.FinishClaim(ctx, id, meta.ReasonDeleted, now, false)
		if err != nil || !done || !res.BlobOrphaned {
			b.Fatalf("finish %d: done=%v orphaned=%v, %v", i, done, res.BlobOrphaned, err)
		}
	}
}

// seedBlobHistory inserts one orphaned, dedupable blob with the given
// digest and n finished claims that once held it, in one transaction.
func seedBlobHistory(b testing.TB, s *Store, base time.Time, digest string, n int) {
	b.Helper()
	err := s.write(context.Background(), func(q *txq) error {
		if err := q.ensureNamespace("bench"); err != nil {
			return err
		}
		at := base.UnixNano()
		if _, err := q.exec(`INSERT INTO blobs (id, namespace, digest, dedupable, size, stored_size, compression,
			object_key, state, refcount, created_at, state_at, collect_at, version)
			VALUES ('bhot', 'bench', ?, 1, 1000, 500, 'zstd', 'bench/bhot', 'orphaned', 0, ?, ?, ?, 1)`,
			digest, at, at, base.Add(24*time.Hour).UnixNano()); err != nil {
			return err
		}
		for i := range n {
			if _, err := q.exec(`INSERT INTO claims (id, namespace, blob_id, state, size, created_at,
				expires_at, due_at, due_reason, grace_period, consumers, deleted_at, delete_reason)
				VALUES (?, 'bench', 'bhot', 'deleted', 1000, ?, ?, NULL, ?, ?, 1, ?, ?)`,
				fmt.Sprintf("old%09d", i), at, at, meta.ReasonExpired, int64(time.Hour), at, meta.ReasonDeleted); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPruneHistory measures how fast PruneHistory deletes the rows of
// finished claims and their collected blobs on SQLite, in pages of 1,000
// (the sweeper's page), with b.N finished claims each on its own deleted
// blob, inserted directly (outside the timer).
func BenchmarkPruneHistory(b *testing.B) {
	ctx := context.Background()
	s := openSQLiteStore(b)
	defer s.Close()
	base := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
	err := s.write(ctx, func(q *txq) error {
		if err := q.ensureNamespace("bench"); err != nil {
			return err
		}
		for i := range b.N {
			id := fmt.Sprintf("%012d", i)
			at := base.Add(time.Duration(i) * time.Millisecond).UnixNano()
			if _, err := q.exec(`INSERT INTO blobs (id, namespace, digest, size, stored_size, compression,
				object_key, state, refcount, created_at, state_at, version)
				VALUES (?, 'bench', ?, 1000, 500, 'zstd', ?, 'deleted', 0, ?, ?, 1)`,
				"b"+id, "sha256:"+id, "bench/b"+id, at, at); err != nil {
				return err
			}
			if _, err := q.exec(`INSERT INTO claims (id, namespace, blob_id, state, size, created_at,
				expires_at, due_reason, consumers, deleted_at, delete_reason)
				VALUES (?, 'bench', ?, 'deleted', 1000, ?, ?, ?, 1, ?, ?)`,
				"c"+id, "b"+id, at, at, meta.ReasonExpired, at, meta.ReasonExpired); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	before := base.Add(time.Duration(b.N+1) * time.Millisecond)

	b.ResetTimer()
	var total meta.PruneResult
	for {
		res, err := s.PruneHistory(ctx, before, 1000)
		if err != nil {
			b.Fatal(err)
		}
		total.Claims += res.Claims
		total.Blobs += res.Blobs
		if res == (meta.PruneResult{}) {
			break
		}
	}
	b.StopTimer()
	if total.Claims != b.N || total.Blobs != b.N {
		b.Fatalf("pruned %+v, want %d of each", total, b.N)
	}
	b.ReportMetric(float64(total.Claims)/b.Elapsed().Seconds(), "claims/s")
}

// BenchmarkClaimLifeIndexes measures what the indexes that make pruning
// cheap (claims_finished and blobs_deleted, migration 0020) cost the life
// of a claim: put (pending, then commit), finish, and the collection of its
// blob (five transactions). indexes=none drops the two, so both variants
// run side by side in one binary.
func BenchmarkClaimLifeIndexes(b *testing.B) {
	for _, variant := range []string{"prune", "none"} {
		b.Run("indexes="+variant, func(b *testing.B) {
			ctx := context.Background()
			s := openSQLiteStore(b)
			defer s.Close()
			if variant == "none" {
				err := s.write(ctx, func(q *txq) error {
					_, err := q.exec(`DROP INDEX claims_finished; DROP INDEX blobs_deleted`)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			now := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
			b.ResetTimer()
			for i := range b.N {
				cid, bid := fmt.Sprintf("c%09d", i), fmt.Sprintf("b%09d", i)
				err := s.CreatePending(ctx, meta.CreatePendingParams{
					Claim: meta.Claim{ID: cid, Namespace: "bench", BlobID: bid, State: meta.ClaimPending,
						Size: 1000, ReservedBytes: 1000, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
						DueAt: now.Add(time.Minute), DueReason: meta.ReasonNeverConfirmed},
					Blob: meta.Blob{ID: bid, Namespace: "bench", Key: "bench/" + bid, State: meta.BlobStaging,
						CreatedAt: now, StateAt: now, CollectAt: now.Add(time.Minute)},
					Now: now,
				})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Commit(ctx, meta.CommitParams{ClaimID: cid, BlobID: bid, Digest: "sha256:" + bid,
					Size: 1000, StoredSize: 500, Compression: "zstd", Now: now,
					DueAt: now.Add(time.Hour), DueReason: meta.ReasonExpired}); err != nil {
					b.Fatal(err)
				}
				if _, done, err := s.FinishClaim(ctx, cid, meta.ReasonDeleted, now, false); err != nil || !done {
					b.Fatalf("finish: %v, %v", done, err)
				}
				got, err := s.BeginCollect(ctx, now, 10, time.Minute)
				if err != nil || len(got) != 1 {
					b.Fatalf("BeginCollect: %d blobs, %v", len(got), err)
				}
				if err := s.FinishCollect(ctx, []string{bid}, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
