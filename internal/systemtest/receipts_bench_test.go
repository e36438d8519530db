package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testsvc"
)

// BenchmarkRedeemReceipts measures redeems whose read receipts fall in
// batches of many namespaces, through `claimcheck serve` and the Go client
// over HTTP: each round puts a batch of fresh 1 KiB payloads spread over
// eight namespaces, then redeems them all from four concurrent workers
// (their receipts queue up together, eight namespaces to a batch), then
// stats one claim of each namespace, which waits until every receipt is
// written. Per redeem it reports the wall time of the redeems (receipts
// are written off the redeem path, so this is the path a consumer waits
// on) and the server's CPU time from the first redeem until the stats
// answered, receipts included. "embedded" runs on the defaults (SQLite
// and files); "postgres" on TEST_DATABASE_URL and files, when it is set.
//
// CLAIMCHECK_BENCH_BASELINE lists claimcheck binaries built from other
// commits (separated like PATH), each run beside this tree's server in
// the same rounds: redeem-ratio-NAME and cpu-ratio-NAME are this tree's
// time ÷ that binary's.
//
//	CLAIMCHECK_BENCH_BASELINE=/path/to/claimcheck-base \
//	  go test -run '^$' -bench RedeemReceipts -benchtime 10x ./internal/systemtest
func BenchmarkRedeemReceipts(b *testing.B) {
	bin := buildBinary(b)
	setups := []benchSetup{{"embedded", func() string { return "" }}}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		setups = append(setups, benchSetup{"postgres", func() string {
			dsn, _ := testsvc.Postgres(b)
			return fmt.Sprintf("metadata: %q\nstorage: %q\n", dsn, "file://"+filepath.ToSlash(b.TempDir()))
		}})
	}
	for _, setup := range setups {
		servers := []served{serveBench(b, "", bin, setup.config())}
		for _, other := range filepath.SplitList(os.Getenv("CLAIMCHECK_BENCH_BASELINE")) {
			servers = append(servers, serveBench(b, filepath.Base(other), other, setup.config()))
		}
		b.Run(setup.name, func(b *testing.B) { benchRedeemReceipts(b, servers) })
	}
}

func benchRedeemReceipts(b *testing.B, servers []served) {
	const (
		batch      = 400
		namespaces = 8
		workers    = 4
	)
	if _, ok := processCPU(servers[0].pid); !ok {
		b.Skip("the server's CPU time is measured on Linux only")
	}
	ctx := context.Background()
	payload := make([]byte, 1<<10)
	rand.Read(payload)
	parallel := func(op func(int) error) {
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Go(func() {
				for i := w; i < batch; i += workers {
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
	wall := make([]time.Duration, len(servers))
	cpu := make([]time.Duration, len(servers))
	refs := make([]claimcheck.Ref, batch)
	requests := 0
	for round := 0; b.Loop(); round++ {
		for k := range servers {
			i := (k + round) % len(servers) // alternate which goes first
			s := servers[i]
			parallel(func(j int) error {
				p := bytes.Clone(payload) // distinct bytes every put: no dedup
				binary.LittleEndian.PutUint64(p, benchSeq.Add(1))
				ref, err := s.c.Put(ctx, fmt.Sprintf("receipts%d", j%namespaces), bytes.NewReader(p), claimcheck.PutOptions{})
				refs[j] = ref
				return err
			})
			c0, _ := processCPU(s.pid)
			start := time.Now()
			parallel(func(j int) error {
				r, err := s.c.Redeem(ctx, refs[j])
				if err != nil {
					return err
				}
				defer r.Close()
				return readAll(r, len(payload))
			})
			wall[i] += time.Since(start)
			for n := range namespaces {
				if info, err := s.c.Stat(ctx, refs[n]); err != nil || info.Reads != 1 {
					b.Fatalf("stat of %s after its redeem: reads %d, %v; want 1", refs[n].Namespace, info.Reads, err)
				}
			}
			c1, _ := processCPU(s.pid)
			cpu[i] += c1 - c0
		}
		requests += batch
	}
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(requests) }
	for i, s := range servers {
		name := "claimcheck"
		if s.name != "" {
			name = s.name
			b.ReportMetric(float64(wall[0])/float64(wall[i]), "redeem-ratio-"+name)
			b.ReportMetric(float64(cpu[0])/float64(cpu[i]), "cpu-ratio-"+name)
		}
		b.ReportMetric(us(wall[i]), name+"-redeem-us")
		b.ReportMetric(us(cpu[i]), name+"-cpu-us")
	}
}
