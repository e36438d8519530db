package sqlmeta

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// BenchmarkFinishDueClaims measures how many claims per second the sweep
// can finish through FinishDueClaims on SQLite, a page per transaction.
// Each claim holds its own committed blob, so every claim also orphans a
// blob: the expensive case. The claims are inserted directly (outside the
// timer) to keep the setup fast; the target is ≥ 10,000 claims/s.
func BenchmarkFinishDueClaims(b *testing.B) {
	for _, page := range []int{500, 1000} {
		b.Run(fmt.Sprintf("page=%d", page), func(b *testing.B) {
			ctx := context.Background()
			s := openSQLiteStore(b)
			defer s.Close()
			base := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
			seedDueClaims(b, s, base, b.N, false)
			now := base.Add(time.Hour)

			b.ResetTimer()
			done := 0
			for done < b.N {
				rs, err := s.FinishDueClaims(ctx, now, page)
				if err != nil {
					b.Fatal(err)
				}
				if len(rs) == 0 {
					b.Fatalf("finished %d of %d claims, then nothing was due", done, b.N)
				}
				done += len(rs)
			}
			b.StopTimer()
			b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "claims/s")

			n, err := s.Namespace(ctx, "bench")
			if err != nil || n.ActiveClaims != 0 || n.UsedBytes != 0 {
				b.Fatalf("counters after the run: %+v, %v", n, err)
			}
		})
	}
}

// seedDueClaims inserts n active claims, each on its own committed blob,
// all due within the hour after base, in one transaction. With ordered,
// due times follow the ids, as they do for the engine's time-ordered ids
// when claims share a max_age (created together, due together); without
// it, claims due one after the other are n/3600 ids apart, one per page,
// as random ids would place them. Rows go in by multi-row INSERTs of
// seedChunk rows, so that seeding a million rows over a PostgreSQL
// connection takes thousands of round trips, not millions.
func seedDueClaims(b testing.TB, s *Store, base time.Time, n int, ordered bool) {
	b.Helper()
	const seedChunk = 500
	created := base.UnixNano()
	err := s.write(context.Background(), func(q *txq) error {
		if err := q.ensureNamespace("bench"); err != nil {
			return err
		}
		for lo := 0; lo < n; lo += seedChunk {
			hi := min(lo+seedChunk, n)
			var blobArgs, claimArgs []any
			for i := lo; i < hi; i++ {
				id := fmt.Sprintf("%012d", i)
				due := base.Add(time.Duration(i%3600) * time.Second).UnixNano()
				if ordered {
					due = base.Add(time.Duration(i) * time.Hour / time.Duration(n)).UnixNano()
				}
				blobArgs = append(blobArgs, "b"+id, "sha256:"+id, "bench/b"+id, created, created)
				claimArgs = append(claimArgs, "c"+id, "b"+id, created, due, due)
			}
			rows := hi - lo
			if _, err := q.exec(`INSERT INTO blobs (id, namespace, digest, dedupable, size, stored_size, compression,
				object_key, state, refcount, created_at, state_at, collect_at, version) VALUES `+
				valueRows(rows, `(?, 'bench', ?, 1, 1000, 500, 'zstd', ?, 'committed', 1, ?, ?, NULL, 1)`), blobArgs...); err != nil {
				return err
			}
			if _, err := q.exec(`INSERT INTO claims (id, namespace, blob_id, state, size, reserved_bytes, created_at,
				expires_at, due_at, due_reason, grace_period, consumers) VALUES `+
				valueRows(rows, `(?, 'bench', ?, 'active', 1000, 1000, ?, ?, ?, '`+meta.ReasonExpired+`', `+
					fmt.Sprint(int64(time.Hour))+`, 1)`), claimArgs...); err != nil {
				return err
			}
		}
		return q.applyNamespace("bench", nsDelta{used: int64(n) * 1000, active: int64(n)})
	})
	if err != nil {
		b.Fatal(err)
	}
}

// valueRows repeats one VALUES row n times, comma-separated.
func valueRows(n int, row string) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}
