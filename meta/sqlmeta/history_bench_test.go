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
// claims, migration 0019); index=all puts back the full index on
// claims (blob_id) that came before it, so the two run side by side in one
// binary. The finish should cost the same whatever the history.
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
			_, err := q.exec(`DROP INDEX claims_live_blob; CREATE INDEX claims_blob_id ON claims (blob_id)`)
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
