package securitytest

import (
	"net/http"
	"strings"
	"testing"
)

// TestWebhookTargetsOutsideTheInternetAreRefused replays every target an
// outsider tried as a tenant admin on the default configuration: each is
// refused when the subscription is made (400 naming url), so the
// dispatcher never holds it, and the loopback listener behind the
// loopback forms gets nothing.
func TestWebhookTargetsOutsideTheInternetAreRefused(t *testing.T) {
	t.Parallel()
	f := newFleet(t, "")
	admin := f.key(t, "acme", "admin")
	srv := f.serve(t)
	tr := newTrap(t)
	port := tr.URL[strings.LastIndex(tr.URL, ":")+1:]
	targets := []string{
		// NAT64, 6to4, Teredo and other IPv6 forms of IPv4 addresses.
		"http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b::10.0.0.1]/", "http://[64:ff9b:1::a00:1]/",
		"http://[2002:a9fe:a9fe::1]/", "http://[::ffff:0:127.0.0.1]:" + port + "/",
		"http://[::127.0.0.1]:" + port + "/", "http://[2001::1]/", "http://[fec0::1]/",
		"http://[::ffff:127.0.0.1]:" + port + "/", "http://[::1]:" + port + "/",
		// IPv4 special-purpose blocks.
		"http://0.1.2.3/", "http://192.0.2.1/", "http://198.18.0.1/", "http://240.0.0.1/",
		"http://255.255.255.255/", "http://169.254.169.254/", "http://10.0.0.1/", "http://100.64.0.1/",
		"http://0.0.0.0:" + port + "/", "http://[::]:" + port + "/",
		// Loopback in the forms a resolver accepts.
		"http://localhost.:" + port + "/", "http://127.1:" + port + "/", "http://0:" + port + "/",
		"http://2130706433:" + port + "/", "http://0x7f000001:" + port + "/", "http://0177.0.0.1:" + port + "/",
		tr.URL + "/",
		// A port no TCP has.
		"http://example.com:181810000/",
	}
	for _, target := range targets {
		a := call(t, http.MethodPost, srv.URL+"/v1/subscriptions", admin, map[string]any{"url": target})
		if a.Status != http.StatusBadRequest || !strings.Contains(a.Body, "url") {
			t.Errorf("subscription to %s: %d %s, want 400 naming url", target, a.Status, a.Body)
		}
	}
	put := call(t, http.MethodPut, srv.URL+"/v1/namespaces/orders/claims", f.key(t, "acme", "producer"), map[string]string{"x": "y"})
	if put.Status/100 != 2 {
		t.Fatalf("put: %d %s", put.Status, put.Body)
	}
	list := call(t, http.MethodGet, srv.URL+"/v1/subscriptions", admin, nil)
	if list.Status != http.StatusOK || strings.Contains(list.Body, "http") {
		t.Errorf("subscriptions after the refused creates: %d %s, want none", list.Status, list.Body)
	}
	if n := tr.hits.Load(); n != 0 {
		t.Errorf("the loopback listener got %d requests", n)
	}
}
