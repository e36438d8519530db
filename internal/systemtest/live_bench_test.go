package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/livefill"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// BenchmarkLiveClaims measures what a user waits on as the live set
// grows: a put of 1 KiB and the redeem of a random old claim, through the
// real binary and the Go client, against two servers side by side in one
// loop: a reference store of 10^4 live claims and a store of
// CLAIMCHECK_BENCH_LIVE claims (default 10^5; the figures in
// docs/PERFORMANCE.md are at 10^6 and 10^7). Both stores are filled by
// internal/testkit/livefill (claims spread over half their lifetime, a sample
// of them with objects), and run with the sweeper disabled, since most clones have no
// object. Each of CLAIMCHECK_BENCH_ROUNDS rounds (default 1000; run with
// -benchtime 1x, the stores are filled once) does both operations on both
// stores, alternating which store goes first. The sqlite case
// always runs; postgres when TEST_DATABASE_URL is set. Each store is
// deleted when its case ends.
//
//	CLAIMCHECK_BENCH_LIVE=1000000 go test -run '^$' -bench LiveClaims -benchtime 1x -timeout 3h ./internal/systemtest
func BenchmarkLiveClaims(b *testing.B) {
	live := envCount(b, "CLAIMCHECK_BENCH_LIVE", 100_000, 10_000)
	rounds := envCount(b, "CLAIMCHECK_BENCH_ROUNDS", 1000, 1)
	const reference = 10_000
	bin := buildBinary(b)
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			if backend == "postgres" && os.Getenv("TEST_DATABASE_URL") == "" {
				b.Skip("TEST_DATABASE_URL is not set")
			}
			ref := liveStore(b, bin, backend, reference)
			big := liveStore(b, bin, backend, live)
			payload := make([]byte, 1<<10)
			rand.Read(payload)
			var seq uint64
			stores := []*liveServer{ref, big}
			for round := range rounds {
				for i := range stores {
					s := stores[(i+round)%2]
					seq++
					binary.LittleEndian.PutUint64(payload, seq) // new content: no dedup
					s.put(b, payload)
					s.redeem(b)
				}
			}
			for _, op := range []string{"put", "redeem"} {
				r, g := ref.times[op], big.times[op]
				b.ReportMetric(median(g)/median(r), op+"-p50-ratio")
				b.ReportMetric(mean(g)/mean(r), op+"-mean-ratio")
				b.ReportMetric(median(r)*1000, op+"-ref-p50-ms")
				b.ReportMetric(median(g)*1000, op+"-live-p50-ms")
			}
		})
	}
}

// envCount is the number in the environment variable name, at least
// least; def when it is unset.
func envCount(b *testing.B, name string, def, least int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		b.Fatalf("%s=%q: want a number of at least %d", name, v, least)
	}
	return n
}

// liveServer is one filled store behind a running serve.
type liveServer struct {
	url    string
	c      *client.Client
	sample []claimcheck.Ref
	next   int
	times  map[string][]float64 // seconds, per operation
}

// liveStore fills a store with n live claims and starts serve on it.
func liveStore(b *testing.B, bin, backend string, n int) *liveServer {
	ctx := context.Background()
	dir := b.TempDir()
	cfg := engine.Config{Data: dir, Sweeper: sweep.Config{Disabled: true}}
	// The fill need not survive a crash of this machine; a page cache of
	// 2 GB keeps the indexes in random key order (object keys) from
	// rereading their pages at every insert.
	driver, dsn := "sqlite", "file:"+filepath.Join(dir, "claimcheck.db")+"?_pragma=synchronous(off)&_pragma=cache_size(-2000000)"
	config := "sweeper:\n  disabled: true\n"
	if backend == "postgres" {
		dsn, _ = testsvc.Postgres(b)
		driver, cfg.Metadata = "pgx", dsn
		config += fmt.Sprintf("metadata: %q\n", dsn)
	}
	store := enginetest.Open(b, cfg)
	tmpl, err := store.Put(ctx, "live", strings.NewReader("a small payload, cloned into every live claim"), claimcheck.PutOptions{})
	store.Close()
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	sample, err := livefill.Fill(ctx, db, tmpl, livefill.Options{
		N: n - 1, Sample: min(n-1, 10_000), BlobDir: filepath.Join(dir, "blobs"), Postgres: backend == "postgres",
		DeferIndexes: true,
		Progress: func(done int) {
			if done%1_000_000 == 0 {
				b.Logf("%s: %d of %d claims after %s", backend, done, n-1, time.Since(start).Round(time.Second))
			}
		},
	})
	if err == nil && backend == "postgres" {
		// What autovacuum does to a table that grew this large: the
		// statistics, and the rows' visibility recorded once, so that the
		// redeems do not each pay for the first look at a copied row.
		_, err = db.ExecContext(ctx, "VACUUM (ANALYZE)")
	}
	db.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: filled %d live claims in %s", backend, n, time.Since(start).Round(time.Second))
	path := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
	url := startServer(b, bin, dir, "--data", dir, "--config", path)
	c, err := client.New(url)
	if err != nil {
		b.Fatal(err)
	}
	return &liveServer{url: url, c: c, sample: sample, times: map[string][]float64{}}
}

func (s *liveServer) put(b *testing.B, payload []byte) {
	start := time.Now()
	if _, err := s.c.Put(context.Background(), "live", bytes.NewReader(payload), claimcheck.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	s.times["put"] = append(s.times["put"], time.Since(start).Seconds())
}

// redeem reads the next claim of the random sample, each once while the
// sample lasts.
func (s *liveServer) redeem(b *testing.B) {
	ref := s.sample[s.next%len(s.sample)]
	s.next++
	start := time.Now()
	p, err := s.c.Redeem(context.Background(), ref)
	if err != nil {
		b.Fatalf("redeem %s: %v", ref.ID, err)
	}
	if _, err := io.Copy(io.Discard, p); err != nil {
		b.Fatal(err)
	}
	p.Close()
	s.times["redeem"] = append(s.times["redeem"], time.Since(start).Seconds())
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func mean(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}
