package sqlmeta

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// BenchmarkDigestFirstHit measures the metadata work of a digest-first
// dedup hit two ways: a lookup first (DedupCandidate, a read; the engine
// now lets CreatePending find the candidate instead, ADR 0145), then
// CommitExisting on the candidate it found (the write transaction:
// quota, blob reference, claim row, created event), against
// CommitExisting alone with the candidate's check inside (one-tx, what
// the engine does on SQLite and files, ADR 0140). SQLite by default;
// PostgreSQL when TEST_DATABASE_URL is set and BENCH_POSTGRES=1.
//
//	go test -run '^$' -bench DigestFirstHit -benchtime 2000x ./meta/sqlmeta
func BenchmarkDigestFirstHit(b *testing.B) {
	ctx := context.Background()
	s := openBenchStore(b)
	defer s.Close()
	now := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
	ns := "bench" + rand.Text()[:8]
	digest := "sha256:" + rand.Text()
	cid, bid := "c_"+rand.Text(), "b_"+rand.Text()
	if err := s.CreatePending(ctx, meta.CreatePendingParams{Now: now,
		Claim: meta.Claim{ID: cid, Namespace: ns, BlobID: bid, State: meta.ClaimPending, Size: 1 << 20, ReservedBytes: 1 << 20,
			CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour), DueAt: now.Add(time.Hour), DueReason: meta.ReasonAborted, Consumers: 1},
		Blob: meta.Blob{ID: bid, Namespace: ns, Key: ns + "/" + bid, State: meta.BlobStaging, CreatedAt: now, StateAt: now, CollectAt: now.Add(time.Hour)},
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Commit(ctx, meta.CommitParams{ClaimID: cid, BlobID: bid, Digest: digest, Size: 1 << 20, StoredSize: 1 << 20,
		Compression: "none", Now: now, DueAt: now.Add(24 * time.Hour), DueReason: meta.ReasonExpired, Dedup: true}); err != nil {
		b.Fatal(err)
	}
	// Each round runs the two ways the engine calls it, in turns first:
	// the candidate read first (objects behind a network), and one
	// transaction with the check inside (local objects; the check here
	// accepts without a stat). A digest-first miss costs the read on the
	// first way and an empty write transaction (the lookup, then a
	// rollback) on the second.
	var tRead, tWrite, tOne, tMissRead, tMissOne time.Duration
	absent := "sha256:" + rand.Text()
	timed := func(d *time.Duration, f func() (bool, error), want bool) {
		start := time.Now()
		hit, err := f()
		*d += time.Since(start)
		if err != nil || hit != want {
			b.Fatalf("hit=%v (want %v), %v", hit, want, err)
		}
	}
	check := func(context.Context, meta.Blob) bool { return true }
	round := 0
	for b.Loop() {
		now = now.Add(time.Millisecond)
		claim := func() meta.Claim {
			return meta.Claim{ID: "c_" + rand.Text(), Namespace: ns, Size: 1 << 20, CreatedAt: now,
				ExpiresAt: now.Add(24 * time.Hour), DueAt: now.Add(24 * time.Hour), DueReason: meta.ReasonExpired, Consumers: 1}
		}
		readFirst := func() {
			var cand meta.Blob
			timed(&tRead, func() (bool, error) {
				var err error
				cand, err = s.DedupCandidate(ctx, ns, digest)
				return true, err
			}, true)
			timed(&tWrite, func() (bool, error) {
				_, hit, err := s.CommitExisting(ctx, meta.CommitExistingParams{Digest: digest, Now: now, Claim: claim(),
					QuotaBytes: 1 << 50, QuotaClaims: 1 << 40, BlobID: cand.ID, Key: cand.Key})
				return hit, err
			}, true)
		}
		oneTx := func() {
			timed(&tOne, func() (bool, error) {
				_, hit, err := s.CommitExisting(ctx, meta.CommitExistingParams{Digest: digest, Now: now, Claim: claim(),
					QuotaBytes: 1 << 50, QuotaClaims: 1 << 40, Check: check})
				return hit, err
			}, true)
		}
		if round++; round%2 == 0 {
			readFirst()
			oneTx()
		} else {
			oneTx()
			readFirst()
		}
		timed(&tMissRead, func() (bool, error) {
			_, err := s.DedupCandidate(ctx, ns, absent)
			if errors.Is(err, meta.ErrNotFound) {
				return false, nil
			}
			return true, err
		}, false)
		timed(&tMissOne, func() (bool, error) {
			_, hit, err := s.CommitExisting(ctx, meta.CommitExistingParams{Digest: absent, Now: now, Claim: claim(), Check: check})
			return hit, err
		}, false)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(tRead), "read-µs")
	b.ReportMetric(per(tWrite), "write-µs")
	b.ReportMetric(per(tOne), "one-tx-µs")
	b.ReportMetric(per(tMissRead), "miss-read-µs")
	b.ReportMetric(per(tMissOne), "miss-one-tx-µs")
}
