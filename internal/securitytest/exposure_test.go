package securitytest

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestMetricsNeverOnTheAPIPortWithAuthOn: with auth on, the API port does
// not answer /metrics to anyone, key or not; metrics.listen serves them on
// an address of their own, for the network to guard.
func TestMetricsNeverOnTheAPIPortWithAuthOn(t *testing.T) {
	t.Parallel()
	f := newFleet(t, "metrics: { listen: '127.0.0.1:0' }\n")
	admin := f.key(t, "acme", "admin")
	srv := f.serve(t)
	for _, key := range []string{"", admin} {
		if a := call(t, http.MethodGet, srv.URL+"/metrics", key, nil); a.Status != http.StatusNotFound || strings.Contains(a.Body, "claimcheck_") {
			t.Errorf("/metrics on the API port (key %t): %d %.200s, want 404", key != "", a.Status, a.Body)
		}
	}
	m := metricsURL.FindStringSubmatch(srv.Logs())
	if m == nil {
		t.Fatalf("serve did not report its metrics listener:\n%s", srv.Logs())
	}
	if a := call(t, http.MethodGet, m[1], "", nil); a.Status != http.StatusOK || !strings.Contains(a.Body, "claimcheck_") {
		t.Errorf("metrics.listen: %d %.200s", a.Status, a.Body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if a := call(t, http.MethodGet, srv.URL+path, "", nil); a.Status != http.StatusOK {
			t.Errorf("%s without a key: %d %s", path, a.Status, a.Body)
		}
	}
}

var metricsURL = regexp.MustCompile(`msg="metrics serving" url=(http://127\.0\.0\.1:\d+/metrics)`)

// TestSettingsThatCannotWorkStopServe: serve refuses to start on each
// setting that cannot work, naming its key as the config file spells it.
func TestSettingsThatCannotWorkStopServe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ key, yaml string }{
		{"subscriptions.timeout", "subscriptions: { timeout: -1s }"},
		{"subscriptions.concurrency", "subscriptions: { concurrency: -1 }"},
		{"subscriptions.settle", "subscriptions: { settle: -5s }"},
		{"subscriptions.events_per_request", "subscriptions: { events_per_request: 5000 }"},
		{"subscriptions.batch", "subscriptions: { batch: 10000000 }"},
		{"tenant", "subscriptions: { targets: [ { id: t, tenant: nope, url: 'https://hooks.example.com/', secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw } ] }"},
		{"tracing.endpoint", "tracing: { endpoint: '::not a url' }"},
		{"storage", "storage: 'gs://b?endpoint=%zz'"},
	} {
		f := newFleet(t, c.yaml+"\n")
		s := startRefused(t, f)
		if !strings.Contains(s, c.key) {
			t.Errorf("%s: serve's refusal does not name %s:\n%s", c.yaml, c.key, s)
		}
	}
}

// startRefused runs serve and returns its log, failing the test when it
// started.
func startRefused(t *testing.T, f *fleet) string {
	t.Helper()
	s := servetestStart(t, f)
	if s.URL != "" {
		t.Errorf("serve started on a config that cannot work:\n%s", s.Logs())
	}
	return s.Logs()
}
