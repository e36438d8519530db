package systemtest

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// jsonStream is size bytes of JSON-like records with pseudo-random
// fields: it compresses about as well as real documents, and is never
// held in memory whole.
type jsonStream struct {
	rng  *mrand.Rand
	left int64
	buf  []byte
}

func newJSONStream(size int64) *jsonStream {
	return &jsonStream{rng: mrand.New(mrand.NewPCG(3, 4)), left: size}
}

func (s *jsonStream) Read(p []byte) (int, error) {
	if s.left == 0 {
		return 0, io.EOF
	}
	for len(s.buf) < len(p) && len(s.buf) < 64<<10 {
		s.buf = append(s.buf, `{"id":`...)
		s.buf = strconv.AppendUint(s.buf, s.rng.Uint64N(1e9), 10)
		s.buf = append(s.buf, `,"album":`...)
		s.buf = strconv.AppendUint(s.buf, s.rng.Uint64N(100), 10)
		s.buf = append(s.buf, `,"title":"photo of the series","url":"https://img.example/`...)
		s.buf = strconv.AppendUint(s.buf, s.rng.Uint64(), 16)
		s.buf = append(s.buf, ".jpg\"},\n"...)
	}
	n := copy(p, s.buf)
	if int64(n) > s.left {
		n = int(s.left)
	}
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	s.left -= int64(n)
	return n, nil
}

// BenchmarkRedeemTail measures what resuming a large download costs: the
// last 1 MiB of a claim (one ranged redeem) beside a full redeem of the
// same claim, through the real `claimcheck serve` binary on the embedded
// defaults and the Go client over loopback, for each way an object is
// stored: plain, zstd, encrypted, encrypted zstd. A tail of a plain or
// encrypted object costs the range; a compressed one is decompressed (and
// verified) whole, so it costs a full redeem (ADR 0110).
//
// The claim is 64 MiB; CLAIMCHECK_BENCH_RANGE_SIZE (bytes) changes it,
// e.g. 1073741824 for 1 GiB.
//
//	go test -run '^$' -bench RedeemTail -benchtime 5x ./internal/systemtest
func BenchmarkRedeemTail(b *testing.B) {
	size := int64(64 << 20)
	if v := os.Getenv("CLAIMCHECK_BENCH_RANGE_SIZE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 2<<20 {
			b.Fatalf("CLAIMCHECK_BENCH_RANGE_SIZE=%q: want a number of bytes, at least 2 MiB", v)
		}
		size = n
	}
	dir := b.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`master_key: %s
namespaces:
  plain: {compression: none}
  zstd: {compression: zstd}
  sealed: {compression: none, encryption: aes-256-gcm}
  sealedz: {compression: zstd, encryption: aes-256-gcm}
`, key)), 0o600); err != nil {
		b.Fatal(err)
	}
	url := startServer(b, buildBinary(b), dir, "--data", dir, "--config", cfg)
	c, err := client.New(url)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	namespaces := []string{"plain", "zstd", "sealed", "sealedz"}
	refs := map[string]claimcheck.Ref{}
	for _, ns := range namespaces {
		ref, err := c.Put(ctx, ns, newJSONStream(size), claimcheck.PutOptions{})
		if err != nil {
			b.Fatal(err)
		}
		refs[ns] = ref
	}
	const tail = 1 << 20
	full, part := map[string]time.Duration{}, map[string]time.Duration{}
	for b.Loop() {
		for _, ns := range namespaces {
			start := time.Now()
			p, err := c.RedeemRange(ctx, refs[ns], -tail, 0)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, p); err != nil || n != tail {
				b.Fatal(ns, n, err)
			}
			p.Close()
			part[ns] += time.Since(start)

			start = time.Now()
			w, err := c.Redeem(ctx, refs[ns])
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, w); err != nil || n != size {
				b.Fatal(ns, n, err)
			}
			w.Close()
			full[ns] += time.Since(start)
		}
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	for _, ns := range namespaces {
		b.ReportMetric(ms(part[ns]), ns+"-tail-ms")
		b.ReportMetric(ms(full[ns]), ns+"-full-ms")
	}
}
