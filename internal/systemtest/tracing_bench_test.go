package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// BenchmarkTracingOverhead measures what tracing costs a 1 KiB put and
// redeem over HTTP, with the Go client, side by side in one run: the
// server built before tracing existed (CLAIMCHECK_BENCH_BASE_BIN, a
// binary of that commit), this server with tracing off, and this server
// with every request sampled, exporting over OTLP to a local collector
// (TEST_JAEGER_OTLP, scripts/jaeger.sh). Each round runs a batch of
// put+redeem pairs against each server in turn, so all three see the same
// machine load; it reports the median of the rounds' ratios:
// off/base and on/off of operations per second (1 = no cost).
// scripts/bench-tracing.sh builds the base and starts Jaeger.
func BenchmarkTracingOverhead(b *testing.B) {
	base, otlp := os.Getenv("CLAIMCHECK_BENCH_BASE_BIN"), os.Getenv("TEST_JAEGER_OTLP")
	if base == "" || otlp == "" {
		b.Skip("CLAIMCHECK_BENCH_BASE_BIN and TEST_JAEGER_OTLP are not set: run scripts/bench-tracing.sh")
	}
	bin := buildBinary(b)
	start := func(bin string, env ...string) *client.Client {
		dir := b.TempDir()
		url, _ := startServerEnv(b, bin, dir, env, "--data", filepath.Join(dir, "data"))
		c, err := client.New(url)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	servers := []*client.Client{
		start(base),
		start(bin),
		start(bin, "OTEL_EXPORTER_OTLP_ENDPOINT="+otlp, "OTEL_TRACES_SAMPLER=always_on", "OTEL_SERVICE_NAME=claimcheck-bench"),
	}
	ctx := context.Background()
	payload := make([]byte, 1<<10)
	_, _ = rand.Read(payload) // crypto/rand does not fail
	var seq uint64
	pair := func(c *client.Client) {
		seq++
		binary.LittleEndian.PutUint64(payload, seq) // new bytes: no dedup
		ref, err := c.Put(ctx, "bench", bytes.NewReader(payload), claimcheck.PutOptions{})
		if err != nil {
			b.Fatal(err)
		}
		p, err := c.Redeem(ctx, ref)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, p); err != nil || n != int64(len(payload)) {
			b.Fatal(n, err)
		}
		p.Close()
	}
	const batch = 100
	for _, c := range servers { // warm connections and caches
		for range batch / 4 {
			pair(c)
		}
	}
	var offBase, onOff []float64
	var rates [3][]float64
	for b.Loop() {
		var r [3]float64
		for i, c := range servers {
			t0 := time.Now()
			for range batch {
				pair(c)
			}
			r[i] = batch / time.Since(t0).Seconds()
			rates[i] = append(rates[i], r[i])
		}
		offBase = append(offBase, r[1]/r[0])
		onOff = append(onOff, r[2]/r[1])
	}
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(median(rates[0]), "base-pairs/s")
	b.ReportMetric(median(rates[1]), "off-pairs/s")
	b.ReportMetric(median(rates[2]), "on-pairs/s")
	b.ReportMetric(median(offBase), "off/base")
	b.ReportMetric(median(onOff), "on/off")
	b.ReportMetric(0, "ns/op")
}
