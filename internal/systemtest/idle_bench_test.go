package systemtest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// TestMeasureIdleSubscriptions is the idle cost of a tenant at its
// subscription limit: `claimcheck serve` (embedded defaults, loopback
// targets allowed) with tenant_limits.subscriptions subscriptions to a
// 127.0.0.1 receiver, no traffic, its CPU (utime + stime from /proc) and
// RSS over CLAIMCHECK_BENCH_IDLE_SECONDS (default 60), beside the same
// server with one subscription. CLAIMCHECK_BENCH_IDLE_SUBS=N measures N
// subscriptions too, with the limit raised to N in the config (ADR 0278:
// the idle cost does not grow with N). CLAIMCHECK_BENCH_IDLE_TENANTS=T
// spreads those N over T tenants (written into the metadata store
// beside the running server, as the API would write them: the API makes
// a tenant's only). docs/PERFORMANCE.md has the figures.
func TestMeasureIdleSubscriptions(t *testing.T) {
	if os.Getenv("CLAIMCHECK_BENCH_IDLE") == "" {
		t.Skip("a measurement: set CLAIMCHECK_BENCH_IDLE=1")
	}
	window := 60 * time.Second
	if n, err := strconv.Atoi(os.Getenv("CLAIMCHECK_BENCH_IDLE_SECONDS")); err == nil && n > 0 {
		window = time.Duration(n) * time.Second
	}
	bin := buildBinary(t)
	rec := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(rec.Close)
	counts := []int{1, 100}
	if n, err := strconv.Atoi(os.Getenv("CLAIMCHECK_BENCH_IDLE_SUBS")); err == nil && n > 0 {
		counts = append(counts, n)
	}
	tenants, _ := strconv.Atoi(os.Getenv("CLAIMCHECK_BENCH_IDLE_TENANTS"))
	for _, n := range counts {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "claimcheck.yaml")
		conf := "subscriptions: { allow_loopback_targets: true }\n"
		if n > 100 {
			conf += fmt.Sprintf("tenant_limits: { subscriptions: %d }\n", n)
		}
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		url, pid := startServerProcess(t, bin, dir, "--config", cfg, "--data", dir)
		if tenants > 1 && n > 100 {
			subscribeTenants(t, filepath.Join(dir, "claimcheck.db"), rec.URL, n, tenants)
			n = -n // the loop below makes none
		}
		for i := range n {
			body := fmt.Sprintf(`{"url":%q}`, rec.URL+"/"+strconv.Itoa(i))
			resp, err := http.Post(url+"/v1/subscriptions", "application/json", bytes.NewReader([]byte(body)))
			if err != nil || resp.StatusCode != http.StatusCreated {
				t.Fatalf("subscription %d: %v %v", i, resp, err)
			}
			_ = resp.Body.Close()
		}
		if n == 100 { // the default limit holds
			resp, err := http.Post(url+"/v1/subscriptions", "application/json", strings.NewReader(`{"url":"`+rec.URL+`/over"}`))
			if err != nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("the 101st subscription: %v %v, want 403", resp, err)
			}
			_ = resp.Body.Close()
		}
		time.Sleep(5 * time.Second) // past the creates' own work
		cpu0, ok0 := processCPU(pid)
		time.Sleep(window)
		cpu1, ok1 := processCPU(pid)
		if !ok0 || !ok1 {
			t.Skip("no /proc CPU counters here")
		}
		n = max(n, -n)
		t.Logf("%4d subscriptions over %d tenants, idle %s: CPU %s (%.1f%% of a core), RSS %.1f MiB",
			n, max(1, min(tenants, n/100)), window, cpu1-cpu0, 100*(cpu1-cpu0).Seconds()/window.Seconds(), float64(processRSS(pid))/(1<<20))
	}
}

// processRSS is the resident set of process pid in bytes, from /proc.
func processRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// subscribeTenants writes n subscriptions to url, spread over tenants
// tenants, into the SQLite metadata store at path.
func subscribeTenants(t *testing.T, path, url string, n, tenants int) {
	ctx := context.Background()
	m, err := sqlmeta.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	now := time.Now()
	for i := range n {
		s := meta.Subscription{ID: fmt.Sprintf("s%05d", i), Tenant: fmt.Sprintf("t%03d", i%tenants), URL: url + "/" + strconv.Itoa(i),
			Secret: []byte("whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="), Enabled: true, Source: meta.SourceAPI,
			CreatedAt: now, Cursor: now.UnixNano(), State: meta.SubscriptionActive}
		if err := m.CreateSubscription(ctx, s, 0); err != nil {
			t.Fatal(err)
		}
	}
}
