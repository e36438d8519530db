package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"os"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// BenchmarkServeUserPaths measures the paths a user of `claimcheck serve`
// waits on, through the real binary on the embedded defaults and the Go
// client over loopback HTTP, interleaved in one loop so every path sees
// the same machine load:
//
//   - miss: a put of 1 MiB the store does not hold (the client sends the
//     digest first, the server asks for the body with 100 Continue);
//   - hit: the same 1 MiB again, answered as a dedup hit before the body
//     is sent (target: at most 0.3x a miss);
//   - small: a put of 1 KiB;
//   - redeem: a verified read of 1 MiB.
//
// A server that waits for a body it does not need, or any other hidden
// pause, shows up here as milliseconds. CLAIMCHECK_BENCH_SERVER=URL runs
// the same loop against a server started by hand instead.
//
//	go test -run '^$' -bench ServeUserPaths -benchtime 200x ./internal/systemtest
func BenchmarkServeUserPaths(b *testing.B) {
	url := os.Getenv("CLAIMCHECK_BENCH_SERVER")
	if url == "" {
		dir := b.TempDir()
		url = startServer(b, buildBinary(b), dir, "--data", dir)
	}
	c, err := client.New(url)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	big, small := make([]byte, 1<<20), make([]byte, 1<<10)
	rand.Read(big)
	rand.Read(small)
	var seq uint64
	fresh := func(p []byte) []byte { // new content every time: no dedup
		seq++
		binary.LittleEndian.PutUint64(p, seq)
		return p
	}
	put := func(p []byte) claimcheck.Ref {
		ref, err := c.Put(ctx, "bench", bytes.NewReader(p), claimcheck.PutOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return ref
	}
	var tMiss, tHit, tSmall, tRedeem time.Duration
	timed := func(d *time.Duration, f func()) {
		start := time.Now()
		f()
		*d += time.Since(start)
	}
	for b.Loop() {
		var ref claimcheck.Ref
		payload := fresh(big)
		timed(&tMiss, func() { ref = put(payload) })
		timed(&tHit, func() {
			if again := put(payload); again.Digest != ref.Digest {
				b.Fatalf("second put of the same bytes: digest %s, want %s", again.Digest, ref.Digest)
			}
		})
		timed(&tSmall, func() { put(fresh(small)) })
		timed(&tRedeem, func() {
			p, err := c.Redeem(ctx, ref)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, p); err != nil || n != int64(len(big)) {
				b.Fatal(n, err)
			}
			p.Close()
		})
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(ms(tMiss), "miss-ms")
	b.ReportMetric(ms(tHit), "hit-ms")
	b.ReportMetric(ms(tSmall), "small-put-ms")
	b.ReportMetric(ms(tRedeem), "redeem-ms")
	b.ReportMetric(tHit.Seconds()/tMiss.Seconds(), "hit/miss")
}
