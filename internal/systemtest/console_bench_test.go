package systemtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkConsolePages measures the operator console's pages on a store
// of CLAIMCHECK_BENCH_LIVE live claims (default 10^6; filled by
// internal/testkit/livefill, as BenchmarkLiveClaims does): the time until
// every API answer a page needs has arrived, its requests sent at once as
// the page sends them, CLAIMCHECK_BENCH_ROUNDS times (default 50). The
// overview asks for the namespaces' counters, the sweeper's lag and the
// subscriptions; a namespace page for the namespace and a page of 50 of
// its claims, the first page, a later one (by the cursor), and pages
// filtered by state and by label. docs/PERFORMANCE.md ("The console at
// 10^6 claims") has the figures; the target is 1 s.
func BenchmarkConsolePages(b *testing.B) {
	live := envCount(b, "CLAIMCHECK_BENCH_LIVE", 1_000_000, 10_000)
	rounds := envCount(b, "CLAIMCHECK_BENCH_ROUNDS", 50, 1)
	s := liveStore(b, buildBinary(b), "sqlite", live)
	get := func(path string) ([]byte, error) {
		resp, err := http.Get(s.url + path)
		if err != nil {
			return nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s %.200s", path, resp.Status, body)
		}
		return body, err
	}
	// The cursor of a page deep in the namespace: the 20th.
	cursor := ""
	for range 20 {
		var page struct{ Next string }
		body, err := get("/v1/namespaces/live/claims?limit=50&cursor=" + cursor)
		if err == nil {
			err = json.Unmarshal(body, &page)
		}
		if err != nil {
			b.Fatal(err)
		}
		cursor = page.Next
	}
	pages := map[string][]string{
		"overview":             {"/v1/namespaces?limit=1000", "/v1/sweeper", "/v1/subscriptions?limit=1000"},
		"namespace":            {"/v1/namespaces/live", "/v1/namespaces/live/claims?limit=50"},
		"namespace-page-21":    {"/v1/namespaces/live", "/v1/namespaces/live/claims?limit=50&cursor=" + cursor},
		"namespace-state":      {"/v1/namespaces/live", "/v1/namespaces/live/claims?limit=50&state=active"},
		"namespace-deleted":    {"/v1/namespaces/live", "/v1/namespaces/live/claims?limit=50&state=deleted"},
		"namespace-label-none": {"/v1/namespaces/live", "/v1/namespaces/live/claims?limit=50&label=team%3Dnone"},
		"console-assets":       {"/console/", "/console/app.js", "/console/app.css"},
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range pages {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		var times []float64
		for range rounds {
			start := time.Now()
			var wg sync.WaitGroup
			errs := make([]error, len(pages[name]))
			for i, path := range pages[name] {
				wg.Go(func() { _, errs[i] = get(path) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start).Seconds())
		}
		b.ReportMetric(median(times)*1000, name+"-p50-ms")
		b.ReportMetric(slices.Max(times)*1000, name+"-max-ms")
	}
}
