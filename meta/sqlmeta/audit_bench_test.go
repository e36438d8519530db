package sqlmeta

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// BenchmarkAuditCost measures what the audit trail adds to the metadata
// work of one claim's life: CreatePending + Commit (a put), RecordReads
// (the redeem's receipt) and FinishClaim (its delete) — four write
// transactions, three of which append an event. Rounds with and without
// events alternate in one run, so both see the same machine load; the
// ratio comes from the summed times. SQLite by default; PostgreSQL when
// TEST_DATABASE_URL is set and BENCH_POSTGRES=1.
//
//	go test -run '^$' -bench AuditCost -benchtime 3000x ./meta/sqlmeta
func BenchmarkAuditCost(b *testing.B) {
	ctx := context.Background()
	s := openBenchStore(b)
	defer s.Close()
	defer auditOff.Store(false)
	now := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
	life := func() {
		now = now.Add(time.Millisecond)
		cid, bid := "c_"+rand.Text(), "b_"+rand.Text()
		cp := meta.CreatePendingParams{Now: now,
			Claim: meta.Claim{ID: cid, Namespace: "bench", BlobID: bid, State: meta.ClaimPending, Size: 1 << 20, ReservedBytes: 1 << 20,
				CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour), DueAt: now.Add(time.Hour), DueReason: meta.ReasonAborted, Consumers: 1},
			Blob: meta.Blob{ID: bid, Namespace: "bench", Key: "bench/" + bid, State: meta.BlobStaging, CreatedAt: now, StateAt: now, CollectAt: now.Add(time.Hour)},
		}
		if err := s.CreatePending(ctx, cp); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Commit(claimcheck.WithActor(ctx, "key"), meta.CommitParams{ClaimID: cid, BlobID: bid, Digest: "sha256:" + rand.Text(),
			Size: 1 << 20, StoredSize: 1 << 20, Compression: "none", Now: now, DueAt: now.Add(24 * time.Hour), DueReason: meta.ReasonExpired}); err != nil {
			b.Fatal(err)
		}
		// Distinct instants, as on a real clock (equal ones would also
		// measure the renumbering of colliding sequence numbers).
		if _, err := s.RecordReads(ctx, []meta.Read{{ClaimID: cid, Namespace: "bench", At: now.Add(time.Microsecond), Actor: "key"}}); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.FinishClaim(claimcheck.WithActor(ctx, "key"), cid, meta.ReasonDeleted, now.Add(2*time.Microsecond), false); err != nil {
			b.Fatal(err)
		}
	}
	var on, off time.Duration
	for i := 0; b.Loop(); i++ {
		for _, audit := range []bool{i%2 == 0, i%2 != 0} { // alternate which goes first
			auditOff.Store(!audit)
			start := time.Now()
			life()
			if audit {
				on += time.Since(start)
			} else {
				off += time.Since(start)
			}
		}
	}
	b.ReportMetric(float64(on.Microseconds())/float64(b.N), "µs/life-audit")
	b.ReportMetric(float64(off.Microseconds())/float64(b.N), "µs/life-noaudit")
	b.ReportMetric(on.Seconds()/off.Seconds(), "audit/noaudit")
}
