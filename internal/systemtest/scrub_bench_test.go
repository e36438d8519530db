package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// BenchmarkRedeemP99WithScrub measures what the background scrub costs
// the redeems it runs beside: two `claimcheck serve` processes on the
// embedded defaults hold the same 200 claims of 1 MiB, one with
// `sweeper.scrub: true` at the default budget (8 MiB/s, so it reads and
// hashes objects all through the run), one without. Redeems of random
// claims alternate between the two through the Go client; it reports
// each one's p50 and p99 and the ratio of the p99s (1: no effect).
//
//	go test -run '^$' -bench RedeemP99WithScrub -benchtime 2000x ./internal/systemtest
func BenchmarkRedeemP99WithScrub(b *testing.B) {
	bin := buildBinary(b)
	var scrubURL string
	start := func(scrub bool) *client.Client {
		dir := b.TempDir()
		cfg := filepath.Join(dir, "claimcheck.yaml")
		conf := "sweeper: {scrub: false}\n"
		if scrub {
			conf = "sweeper: {scrub: true}\n"
		}
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			b.Fatal(err)
		}
		url := startServer(b, bin, dir, "--data", dir, "--config", cfg)
		if scrub {
			scrubURL = url
		}
		c, err := client.New(url)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	scrubbed, plain := start(true), start(false)
	ctx := context.Background()
	payload := make([]byte, 1<<20)
	var refs [2][]claimcheck.Ref
	for i := range 200 {
		rand.Read(payload)
		for j, c := range []*client.Client{scrubbed, plain} {
			ref, err := c.Put(ctx, "bench", bytes.NewReader(payload), claimcheck.PutOptions{})
			if err != nil {
				b.Fatalf("put %d: %v", i, err)
			}
			refs[j] = append(refs[j], ref)
		}
	}
	var lat [2][]time.Duration
	redeem := func(j int, c *client.Client) {
		ref := refs[j][mrand.IntN(len(refs[j]))]
		t0 := time.Now()
		p, err := c.Redeem(ctx, ref)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, p); err != nil || n != ref.Size {
			b.Fatal(n, err)
		}
		p.Close()
		lat[j] = append(lat[j], time.Since(t0))
	}
	before := scrubbedBytes(b, scrubURL)
	for b.Loop() {
		redeem(0, scrubbed)
		redeem(1, plain)
	}
	// The scrub must have been reading while the redeems ran, or the
	// comparison says nothing.
	read := scrubbedBytes(b, scrubURL) - before
	if read <= 0 {
		b.Fatalf("the scrub read nothing during the run")
	}
	b.ReportMetric(read/1e6, "scrubbed-MB")
	pct := func(d []time.Duration, q float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[int(q*float64(len(s)-1))].Seconds() * 1000
	}
	b.ReportMetric(pct(lat[0], 0.5), "scrub-p50-ms")
	b.ReportMetric(pct(lat[0], 0.99), "scrub-p99-ms")
	b.ReportMetric(pct(lat[1], 0.5), "plain-p50-ms")
	b.ReportMetric(pct(lat[1], 0.99), "plain-p99-ms")
	b.ReportMetric(pct(lat[0], 0.99)/pct(lat[1], 0.99), "p99-ratio")
}

// scrubbedBytes reads claimcheck_scrub_bytes_total from a server's
// /metrics.
func scrubbedBytes(b *testing.B, url string) float64 {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, "claimcheck_scrub_bytes_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatal(err)
			}
			return f
		}
	}
	b.Fatalf("no claimcheck_scrub_bytes_total in %s/metrics", url)
	return 0
}
