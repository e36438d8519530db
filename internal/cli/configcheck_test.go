package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/internal/cli"
)

// TestServeRefusesBadSettings: serve refuses, at start and before it
// opens anything, every setting it cannot run as written, naming the key
// as written. Before, these were replaced by defaults without a word
// (a negative timeout, concurrency or settle), accepted past the API's
// own bound (events_per_request above claimcheck.MaxEventsPerRequest) or
// a sane one (batch), made a subscription of an undeclared tenant, only
// logged when the first span was exported (tracing.endpoint), or
// dropped (a storage URL parameter with a bad %-escape).
func TestServeRefusesBadSettings(t *testing.T) {
	target := "subscriptions:\n  targets:\n    - { id: t1, tenant: %s, url: 'https://hooks.example.com/x', secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw }\n"
	cases := []struct{ name, yaml, want string }{
		{"timeout", "subscriptions: { timeout: -1s }", "subscriptions.timeout: must be positive (or 0 for the default) (got -1s)"},
		{"concurrency", "subscriptions: { concurrency: -1 }", "subscriptions.concurrency: must be from 1 to 256"},
		{"concurrency above", "subscriptions: { concurrency: 100000 }", "subscriptions.concurrency: must be from 1 to 256"},
		{"settle", "subscriptions: { settle: -5s }", "subscriptions.settle: must be positive"},
		{"events_per_request", "subscriptions: { events_per_request: 5000 }", "subscriptions.events_per_request: must be from 1 to 1000"},
		{"batch", "subscriptions: { batch: 10000000 }", "subscriptions.batch: must be from 1 to 10000"},
		{"backoff", "subscriptions: { backoff_min: 10m, backoff_max: 1m }", "subscriptions.backoff_min: must not be above subscriptions.backoff_max"},
		{"other durations", "subscriptions: { lag_bound: -1h }", "subscriptions.lag_bound: must be positive"},
		{"target tenant", strings.Replace(target, "%s", "nobody", 1), `subscriptions.targets[0].tenant: is not declared in the tenants section (got "nobody")`},
		{"tracing endpoint", `tracing: { endpoint: "::not a url" }`, `tracing.endpoint "::not a url": not a URL`},
		{"tracing endpoint scheme", `tracing: { endpoint: "collector:4317" }`, `tracing.endpoint "collector:4317": want an http:// or https:// URL`},
		{"storage parameter", `storage: "gs://b?endpoint=%zz"`, `storage: the URL's query does not parse`},
		{"metadata parameter", `metadata: "postgres://db/cc?sslmode=%zz"`, `metadata: the URL's query does not parse`},
		{"sweeper page_size", "sweeper: { page_size: 1000000 }", "sweeper.page_size 1000000: at most 10000"},
		{"sweeper negative", "sweeper: { interval: -1s }", "sweeper.interval -1s: must not be negative"},
		{"http rate_limit", "http: { rate_limit: .nan }", "http.rate_limit NaN: must be a number"},
		{"http rate_limit infinite", "http: { rate_limit: .inf }", "http.rate_limit +Inf: must be a number"},
		{"http trusted_proxies", "http: { trusted_proxies: [nope] }", `http.trusted_proxies "nope"`},
		{"metrics listen", "metrics: { listen: nine-thousand }", `metrics.listen: want host:port`},
		{"metrics listen is the API's", "listen: 127.0.0.1:8080\nmetrics: { listen: 127.0.0.1:8080 }", `metrics.listen: must differ from listen`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "claimcheck.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(dir, "data")
			_, stderr, code := runMainEnv(t, nil, "serve", "--config", path, "--data", data, "--listen", "127.0.0.1:0")
			if code == cli.ExitOK || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "config "+path+": ") {
				t.Fatalf("exit %d, stderr %q; want %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Fatalf("serve created %s before refusing the config (%v)", data, err)
			}
		})
	}
}
