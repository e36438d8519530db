package securitytest

import (
	"net/http"
	"strings"
	"testing"
)

// TestMetricsNeedAKeyWithAuthOn: with auth on, the API port answers
// /metrics only to a key allowed to read them.
func TestMetricsNeedAKeyWithAuthOn(t *testing.T) {
	t.Parallel()
	f := newFleet(t, "")
	producer := f.key(t, "acme", "producer")
	srv := f.serve(t)
	if a := call(t, http.MethodGet, srv.URL+"/metrics", "", nil); a.Status != http.StatusUnauthorized {
		t.Errorf("/metrics without a key: %d %.200s, want 401", a.Status, a.Body)
	}
	if a := call(t, http.MethodGet, srv.URL+"/metrics", producer, nil); a.Status != http.StatusForbidden {
		t.Errorf("/metrics with a producer key: %d %.200s, want 403", a.Status, a.Body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if a := call(t, http.MethodGet, srv.URL+path, "", nil); a.Status != http.StatusOK {
			t.Errorf("%s without a key: %d %s", path, a.Status, a.Body)
		}
	}
}

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
		{"endpoint", "storage: 'gs://b?endpoint=%zz'"},
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
