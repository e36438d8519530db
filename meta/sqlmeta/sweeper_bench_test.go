package sqlmeta

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/memstore"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// BenchmarkSweeperMillion measures the background sweeper end to end on
// SQLite and on PostgreSQL, with mem:// blobs: 1,000,000 expired claims,
// each on its own blob with an object, are finished (claims/s, target ≥
// 10,000), then, past the grace period, their blobs are collected
// (blobs/s); cpu-µs/claim is the process's CPU time per finished claim,
// which a loaded machine does not change, and pg-cpu-µs/claim the same
// for the PostgreSQL server processes when the server runs on this
// machine. An instrumented blob wrapper
// counts the backend requests: the benchmark fails unless there is
// exactly one delete per blob and no listing. It lives here, not in package sweep, because seeding a
// million rows needs this package's direct inserts.
//
// Two layouts of the same backlog: "ordered", where claims due together
// sit together in the id index, as the engine's time-ordered ids place
// claims that share a max_age; and "spread", one due claim per index page,
// as random ids placed them.
//
//	go test -run '^$' -bench SweeperMillion -benchtime 1x ./meta/sqlmeta/
//
// CLAIMCHECK_BENCH_CLAIMS sets another count. The PostgreSQL runs use a
// fresh schema of TEST_DATABASE_URL (internal/testkit/testsvc) and are skipped
// without it.
func BenchmarkSweeperMillion(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("CLAIMCHECK_BENCH_CLAIMS")); err == nil && v > 0 {
		n = v
	}
	databases := []struct {
		name string
		open func(b *testing.B) *Store
	}{
		{"sqlite", func(b *testing.B) *Store { return openSQLiteStore(b) }},
		{"postgres", func(b *testing.B) *Store {
			dsn, _ := testsvc.Postgres(b)
			s, err := Open(context.Background(), dsn+"&application_name="+benchApp)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, db := range databases {
		b.Run(db.name, func(b *testing.B) {
			for _, layout := range []string{"ordered", "spread"} {
				b.Run(layout, func(b *testing.B) { benchSweeper(b, db.open, n, layout == "ordered") })
			}
		})
	}
}

// benchApp names the benchmark's PostgreSQL connections, so that their
// server processes can be found (backendCPU).
var benchApp = "sweeper_bench_" + strconv.Itoa(os.Getpid())

func benchSweeper(b *testing.B, open func(b *testing.B) *Store, n int, ordered bool) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		s := open(b)
		clk := &movingClock{}
		base := clk.Now().Add(-2 * time.Hour) // every claim is due
		seedDueClaims(b, s, base, n, ordered)
		if s.d.name == "postgres" {
			// A table that grew to this size would have been analysed by
			// autovacuum; the planner needs the statistics to pick the
			// due index over a scan.
			if err := s.write(ctx, func(q *txq) error {
				_, err := q.exec(`ANALYZE`)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
		mem, err := blob.Open(ctx, "mem://")
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			w, err := mem.NewWriter(ctx, "bench/b"+pad12(i))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.Write([]byte("x")); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		counted, counts := blob.NewCounting(mem)
		sw := sweep.New(sweep.Config{}, s, counted, nil, clk, nil, nil)
		b.StartTimer()

		cpu0 := processCPU(b)
		pg0, pgOK := backendCPU(s, benchApp)
		start := time.Now()
		res, err := sw.RunOnce(ctx, 0)
		finish := time.Since(start)
		cpu := processCPU(b) - cpu0
		pg1, pgOK1 := backendCPU(s, benchApp)
		if err != nil || res.ClaimsFinished != n {
			b.Fatalf("finished %d of %d: %v", res.ClaimsFinished, n, err)
		}
		clk.Advance(time.Hour) // past the grace period
		start = time.Now()
		res, err = sw.RunOnce(ctx, 0)
		collect := time.Since(start)
		if err != nil || res.BlobsCollected != n {
			b.Fatalf("collected %d of %d: %v", res.BlobsCollected, n, err)
		}
		b.StopTimer()
		c := counts.Counts()
		b.ReportMetric(float64(n)/finish.Seconds(), "claims/s")
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/claim")
		if pgOK && pgOK1 {
			b.ReportMetric(float64((pg1-pg0).Microseconds())/float64(n), "pg-cpu-µs/claim")
		}
		b.ReportMetric(float64(n)/collect.Seconds(), "blobs/s")
		b.ReportMetric(float64(c.Deletes+c.BatchKeys)/float64(n), "deletes/blob")
		b.ReportMetric(float64(c.Lists), "lists")
		if c.Deletes+c.BatchKeys != int64(n) || c.Lists != 0 {
			b.Fatalf("blob requests: %d deletes and %d batched keys for %d blobs, %d listings; want one delete per blob and none",
				c.Deletes, c.BatchKeys, n, c.Lists)
		}
		if objs, _, err := mem.List(ctx, "", "", 10); err != nil || len(objs) != 0 {
			b.Fatalf("objects left: %d (%v)", len(objs), err)
		}
		mem.Close()
		s.Close()
		b.StartTimer()
	}
}

// movingClock is the wall clock moved ahead by Advance. The sweeper must
// see time pass between its pages as it does in production: a fake clock
// that stands still gives every page the same finish time, and so the
// audit events of every page the same sequence numbers (audit.go), a
// collision a running store never has.
type movingClock struct{ ahead atomic.Int64 }

func (c *movingClock) Now() time.Time {
	return time.Now().Add(time.Duration(c.ahead.Load()))
}

func (c *movingClock) Advance(d time.Duration) { c.ahead.Add(int64(d)) }

func pad12(i int) string {
	s := strconv.Itoa(i)
	for len(s) < 12 {
		s = "0" + s
	}
	return s
}
