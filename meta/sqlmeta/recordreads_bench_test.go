package sqlmeta

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// BenchmarkRecordReads measures a batch of read receipts as the engine
// writes them (engine/reads.go): reads of active claims spread over one
// or more namespaces, interleaved, one RecordReads call per batch. Each
// round writes the batch twice, in alternating order, so that both see
// the same machine load: with each read naming its claim's namespace
// (one group, and on PostgreSQL one statement, per namespace) and with
// none named (the claims found by id alone, one group for the batch: the
// statements RecordReads sent before reads named their namespace). The
// ratio comes from the summed times. SQLite always; PostgreSQL, in a
// schema of its own, when TEST_DATABASE_URL is set.
//
//	go test -run '^$' -bench RecordReads -benchtime 2000x ./meta/sqlmeta
func BenchmarkRecordReads(b *testing.B) {
	dbs := []string{"sqlite"}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		dbs = append(dbs, "postgres")
	}
	for _, db := range dbs {
		for _, shape := range []struct{ reads, namespaces int }{{3, 1}, {3, 3}, {64, 8}} {
			b.Run(fmt.Sprintf("db=%s/reads=%d/namespaces=%d", db, shape.reads, shape.namespaces), func(b *testing.B) {
				var s *Store
				if db == "postgres" {
					s = openPostgresStore(b, os.Getenv("TEST_DATABASE_URL"))
				} else {
					s = openSQLiteStore(b)
				}
				defer s.Close()
				const perNamespace = 2000
				base := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
				ids := make([][]string, shape.namespaces)
				for n := range shape.namespaces {
					ids[n] = seedActiveClaims(b, s, fmt.Sprintf("bench%d", n), base, perNamespace)
				}
				ctx := context.Background()
				// Statistics, as a database that has been in use has them:
				// without, the planner guesses a claims table of a few rows.
				if _, err := s.w.ExecContext(ctx, "ANALYZE"); err != nil {
					b.Fatal(err)
				}
				at := base
				next := 0
				batch := func(named bool) []meta.Read {
					reads := make([]meta.Read, shape.reads)
					for i := range reads {
						// Reads interleave their namespaces, as concurrent
						// redeems of several namespaces queue them.
						n := i % shape.namespaces
						at = at.Add(time.Microsecond)
						reads[i] = meta.Read{ClaimID: ids[n][(next+i/shape.namespaces)%perNamespace], At: at, Actor: "key"}
						if named {
							reads[i].Namespace = fmt.Sprintf("bench%d", n)
						}
					}
					next += shape.reads / shape.namespaces
					return reads
				}
				var byNamespace, byID time.Duration
				for i := 0; b.Loop(); i++ {
					for _, named := range []bool{i%2 == 0, i%2 != 0} { // alternate which goes first
						reads := batch(named)
						start := time.Now()
						skipped, err := s.RecordReads(ctx, reads)
						if named {
							byNamespace += time.Since(start)
						} else {
							byID += time.Since(start)
						}
						if err != nil || len(skipped) != 0 {
							b.Fatalf("RecordReads: skipped %v, %v", skipped, err)
						}
					}
				}
				b.ReportMetric(float64(byNamespace.Microseconds())/float64(b.N), "µs/batch-by-namespace")
				b.ReportMetric(float64(byID.Microseconds())/float64(b.N), "µs/batch-by-id")
				b.ReportMetric(byNamespace.Seconds()/byID.Seconds(), "by-namespace/by-id")
			})
		}
	}
}

// seedActiveClaims inserts n active claims of namespace ns, each on its
// own committed blob, and returns their ids.
func seedActiveClaims(b testing.TB, s *Store, ns string, base time.Time, n int) []string {
	b.Helper()
	created, expires := base.UnixNano(), base.Add(24*time.Hour).UnixNano()
	ids := make([]string, n)
	var blobArgs, claimArgs []any
	for i := range ids {
		id := fmt.Sprintf("%s_%06d", ns, i)
		ids[i] = "c" + id
		blobArgs = append(blobArgs, "b"+id, ns, "sha256:"+id, ns+"/b"+id, created, created)
		claimArgs = append(claimArgs, "c"+id, ns, "b"+id, created, expires, expires)
	}
	err := s.write(context.Background(), func(q *txq) error {
		if err := q.ensureNamespace(ns); err != nil {
			return err
		}
		if _, err := q.exec(`INSERT INTO blobs (id, namespace, digest, dedupable, size, stored_size, compression,
			object_key, state, refcount, created_at, state_at, collect_at, version) VALUES `+
			valueRows(n, `(?, ?, ?, 1, 1000, 1000, 'none', ?, 'committed', 1, ?, ?, NULL, 1)`), blobArgs...); err != nil {
			return err
		}
		if _, err := q.exec(`INSERT INTO claims (id, namespace, blob_id, state, size, reserved_bytes, created_at,
			expires_at, due_at, due_reason, consumers) VALUES `+
			valueRows(n, `(?, ?, ?, 'active', 1000, 1000, ?, ?, ?, '`+meta.ReasonExpired+`', 1)`), claimArgs...); err != nil {
			return err
		}
		return q.applyNamespace(ns, nsDelta{used: int64(n) * 1000, active: int64(n)})
	})
	if err != nil {
		b.Fatal(err)
	}
	return ids
}
