package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// BenchmarkConcurrentInitsQuota starts 50 uploads at once in a namespace
// whose byte quota admits only 20 of them, b.N times (a fresh namespace
// each time), on SQLite (and on PostgreSQL with TEST_DATABASE_URL set,
// as sub-benchmark postgres). It fails on any over- or under-admission
// and reports inits per second (admitted and refused alike).
//
//	go test -run '^$' -bench BenchmarkConcurrentInitsQuota -benchtime 20x .
func BenchmarkConcurrentInitsQuota(b *testing.B) {
	const (
		inits = 50
		fit   = 20
		size  = 1 << 20
	)
	withQuota := func(c *Config) {
		c.Defaults.Policy.Quota = claimcheck.Quota{Bytes: fit * size}
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			var mutate []func(*Config)
			mutate = append(mutate, withQuota)
			if backend == "postgres" {
				dsn, _ := testsvc.Postgres(b)
				mutate = append(mutate, func(c *Config) { c.Metadata = dsn })
			}
			ub := setupUploads(b, false, mutate...)
			ctx := context.Background()
			req := claimcheck.UploadRequest{Size: size, Digest: claimcheck.DigestOf([]byte("the same declared payload"))}
			round := 0
			for b.Loop() {
				round++
				ns := fmt.Sprintf("q%d", round)
				var (
					wg       sync.WaitGroup
					mu       sync.Mutex
					admitted int
				)
				for range inits {
					wg.Go(func() {
						u, err := ub.s.InitUpload(ctx, ns, req)
						switch {
						case err == nil:
							ub.track(u.ID)
							mu.Lock()
							admitted++
							mu.Unlock()
						case !errors.Is(err, claimcheck.ErrQuotaExceeded):
							b.Errorf("init: %v", err)
						}
					})
				}
				wg.Wait()
				if admitted != fit {
					b.Fatalf("round %d: %d of %d inits admitted, the quota fits %d", round, admitted, inits, fit)
				}
				n, err := ub.s.meta.Namespace(ctx, ns)
				if err != nil {
					b.Fatal(err)
				}
				if n.ReservedBytes != fit*size || n.PendingClaims != fit {
					b.Fatalf("round %d: namespace %+v", round, n)
				}
			}
			b.ReportMetric(float64(inits*b.N)/b.Elapsed().Seconds(), "inits/s")
		})
	}
}
