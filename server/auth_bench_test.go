package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/server"
)

// BenchmarkAuthOverhead measures what auth adds to a small request (a
// stat: one metadata read): the key lookup (never cached), the claim's
// namespace (cached: it never changes) and the rate limiter. The same
// store is served twice, with and without auth, and every iteration
// sends one request to each, so both see the same machine load; the
// results are the mean latency of each ("off-ns/op", "on-ns/op").
//
//	go test -run '^$' -bench AuthOverhead -benchtime 3000x -count 3 ./server
func BenchmarkAuthOverhead(b *testing.B) {
	ab := setupAuth(b, server.Limits{})
	_, token, err := ab.auth.Create(b.Context(), auth.CreateParams{Tenant: "acme", Role: auth.RoleConsumer})
	if err != nil {
		b.Fatal(err)
	}
	off := httptest.NewServer(server.New(server.Config{Claims: ab.store}))
	b.Cleanup(off.Close)
	ref := ab.claim(b, "a1")
	stat := func(base, token string) time.Duration {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/claims/"+ref.ID+"/meta", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("stat: %s", resp.Status)
		}
		return d
	}
	var tOff, tOn time.Duration
	n := 0
	for b.Loop() {
		tOff += stat(off.URL, "")
		tOn += stat(ab.http.URL, token)
		n++
	}
	b.ReportMetric(float64(tOff.Nanoseconds())/float64(n), "off-ns/op")
	b.ReportMetric(float64(tOn.Nanoseconds())/float64(n), "on-ns/op")
	b.ReportMetric(float64(tOn)/float64(tOff), "on/off")
}
