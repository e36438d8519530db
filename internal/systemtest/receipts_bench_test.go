package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
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
	for _, set := range baselineSets(b, buildBinary(b)) {
		b.Run(set.name, func(b *testing.B) { benchRedeemReceipts(b, set.servers) })
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
	parallel := func(op func(int) error) { onWorkers(b, workers, batch, op) }
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
	reportBeside(b, servers, requests, besideMetric{"redeem", wall}, besideMetric{"cpu", cpu})
}
