package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// BenchmarkServeCPU measures the CPU time a running `claimcheck serve`
// spends per 1 KiB put and per redeem over HTTP with the Go client: the
// server process's user + system time (/proc, in the kernel's 10 ms
// ticks) over a batch of requests, divided by the batch. CPU time, not
// wall time, because it is what bounds a CPU-bound server's throughput
// and what a shared machine's load moves least.
//
// Each round puts a batch of fresh 1 KiB payloads (random bytes: no
// dedup, nothing to compress) from four concurrent workers, then redeems
// every one of them, against each server in turn. "embedded" runs on the
// defaults (SQLite and files); "postgres" on TEST_DATABASE_URL and files,
// when it is set.
//
// CLAIMCHECK_BENCH_BASELINE lists claimcheck binaries built from other
// commits (separated like PATH), each run beside this tree's server in
// the same rounds on its own data directory and schema. Metrics, per
// server (NAME: "claimcheck" for this tree, else the binary's file):
// NAME-put-us and NAME-redeem-us, the server's CPU microseconds per
// request; put-ratio-NAME and redeem-ratio-NAME, this tree's CPU per
// request ÷ that binary's. CLAIMCHECK_BENCH_CPU_BATCH sets the batch
// (default 500 requests of each kind per server and round).
//
//	go test -run '^$' -bench ServeCPU -benchtime 20x ./internal/systemtest
//
// scripts/bench-cpu.sh builds the server at a base commit and runs it
// as the baseline.
func BenchmarkServeCPU(b *testing.B) {
	bin := buildBinary(b)
	batch := 500
	if v := os.Getenv("CLAIMCHECK_BENCH_CPU_BATCH"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CLAIMCHECK_BENCH_CPU_BATCH=%q: want a positive number of requests", v)
		}
		batch = n
	}
	for _, set := range baselineSets(b, bin) {
		b.Run(set.name, func(b *testing.B) { benchServeCPU(b, set.servers, batch) })
	}
}

// baselineSet is a set-up's servers: this tree's first, then one per
// binary of CLAIMCHECK_BENCH_BASELINE, each on its own data directory
// (and schema).
type baselineSet struct {
	name    string
	servers []served
}

// baselineSets starts bin and the CLAIMCHECK_BENCH_BASELINE binaries on
// the defaults (SQLite and files: "embedded") and, when
// TEST_DATABASE_URL is set, on PostgreSQL and files ("postgres").
func baselineSets(b *testing.B, bin string) []baselineSet {
	setups := []benchSetup{{"embedded", func() string { return "" }}}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		setups = append(setups, benchSetup{"postgres", func() string {
			dsn, _ := testsvc.Postgres(b)
			return fmt.Sprintf("metadata: %q\nstorage: %q\n", dsn, "file://"+filepath.ToSlash(b.TempDir()))
		}})
	}
	var sets []baselineSet
	for _, setup := range setups {
		servers := []served{serveBench(b, "", bin, setup.config())}
		for _, other := range filepath.SplitList(os.Getenv("CLAIMCHECK_BENCH_BASELINE")) {
			servers = append(servers, serveBench(b, filepath.Base(other), other, setup.config()))
		}
		sets = append(sets, baselineSet{setup.name, servers})
	}
	return sets
}

// onWorkers runs op(i) for i in [0, n) on workers goroutines, each
// taking every workers-th i, and fails b on the first error of any.
func onWorkers(b *testing.B, workers, n int, op func(int) error) {
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := op(i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// cpuWorkers is how many clients put and redeem at once.
const cpuWorkers = 4

func benchServeCPU(b *testing.B, servers []served, batch int) {
	if _, ok := processCPU(servers[0].pid); !ok {
		b.Skip("the server's CPU time is measured on Linux only")
	}
	ctx := context.Background()
	payload := make([]byte, 1<<10)
	rand.Read(payload)
	// each runs op(i) for i in [0, batch) on cpuWorkers workers and
	// returns the server's CPU time meanwhile.
	each := func(s served, op func(int) error) time.Duration {
		c0, _ := processCPU(s.pid)
		onWorkers(b, cpuWorkers, batch, op)
		c1, _ := processCPU(s.pid)
		return c1 - c0
	}
	putCPU := make([]time.Duration, len(servers))
	redeemCPU := make([]time.Duration, len(servers))
	requests := 0
	refs := make([]claimcheck.Ref, batch)
	for b.Loop() {
		for i, s := range servers {
			putCPU[i] += each(s, func(j int) error {
				p := bytes.Clone(payload) // distinct bytes every put: no dedup
				binary.LittleEndian.PutUint64(p, benchSeq.Add(1))
				ref, err := s.c.Put(ctx, "bench", bytes.NewReader(p), claimcheck.PutOptions{})
				refs[j] = ref
				return err
			})
			redeemCPU[i] += each(s, func(j int) error {
				r, err := s.c.Redeem(ctx, refs[j])
				if err != nil {
					return err
				}
				defer r.Close()
				return readAll(r, len(payload))
			})
		}
		requests += batch
	}
	reportBeside(b, servers, requests, besideMetric{"put", putCPU}, besideMetric{"redeem", redeemCPU})
}

// besideMetric is one measure of every server of a baselineSet, in its
// order: reported as NAME-name-us per request and name-ratio-NAME, this
// tree's ÷ that server's.
type besideMetric struct {
	name string
	per  []time.Duration
}

func reportBeside(b *testing.B, servers []served, requests int, metrics ...besideMetric) {
	for i, s := range servers {
		name := "claimcheck"
		if s.name != "" {
			name = s.name
			for _, m := range metrics {
				b.ReportMetric(float64(m.per[0])/float64(m.per[i]), m.name+"-ratio-"+name)
			}
		}
		for _, m := range metrics {
			b.ReportMetric(float64(m.per[i].Microseconds())/float64(requests), name+"-"+m.name+"-us")
		}
	}
}
