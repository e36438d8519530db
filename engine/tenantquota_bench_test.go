package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// BenchmarkTenantQuotaPut measures what the tenant quota costs a put:
// concurrent 1 KiB puts (8 goroutines per core) into three namespaces of a
// tenant with a quota (the admission sums the tenant's namespaces, and on
// PostgreSQL locks the tenant row) interleaved with puts into three
// namespaces of a tenant without one (namespace quota only), in one run
// on one store, so both kinds see the same load. It reports the mean
// latency of each kind and their ratio. SQLite always; PostgreSQL when
// TEST_DATABASE_URL is set. Blobs are files.
//
//	go test -run '^$' -bench TenantQuotaPut -benchtime 4000x .
func BenchmarkTenantQuotaPut(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchTenantQuota(b, "sqlite:"+filepath.Join(b.TempDir(), "claimcheck.db"))
	})
	b.Run("postgres", func(b *testing.B) {
		dsn, _ := testsvc.Postgres(b)
		benchTenantQuota(b, dsn)
	})
}

func benchTenantQuota(b *testing.B, metadata string) {
	ctx := context.Background()
	off := false
	ns := func(tenant string) claimcheck.Policy {
		return claimcheck.Policy{Tenant: tenant, Compression: claimcheck.CompressionNone, Dedup: &off, Quota: claimcheck.Quota{Bytes: 1 << 40, Claims: 1 << 40}}
	}
	s, err := Open(ctx, Config{
		Data: b.TempDir(), Metadata: metadata, Logger: slog.New(slog.DiscardHandler),
		Tenants: map[string]claimcheck.TenantPolicy{"acme": {Quota: claimcheck.Quota{Bytes: 1 << 40, Claims: 1 << 40}}, "free": {}},
		Namespaces: map[string]claimcheck.Policy{
			"t1": ns("acme"), "t2": ns("acme"), "t3": ns("acme"),
			"p1": ns("free"), "p2": ns("free"), "p3": ns("free"),
		},
		Sweeper: sweep.Config{Disabled: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	names := [2][3]string{{"t1", "t2", "t3"}, {"p1", "p2", "p3"}}
	var (
		next       atomic.Int64
		nanos, ops [2]atomic.Int64
	)
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		payload := make([]byte, 1024)
		for pb.Next() {
			i := next.Add(1)
			kind := i % 2
			rand.Read(payload)
			start := time.Now()
			if _, err := s.Put(ctx, names[kind][(i/2)%3], bytes.NewReader(payload), claimcheck.PutOptions{Size: int64(len(payload))}); err != nil {
				b.Error(err)
				return
			}
			nanos[kind].Add(int64(time.Since(start)))
			ops[kind].Add(1)
		}
	})
	b.StopTimer()
	mean := func(k int) float64 { return float64(nanos[k].Load()) / float64(max(ops[k].Load(), 1)) / 1e3 }
	b.ReportMetric(mean(0), "µs/put-tenant-quota")
	b.ReportMetric(mean(1), "µs/put-ns-quota-only")
	b.ReportMetric(mean(0)/mean(1), "ratio")
}
