package securitytest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const hook = "https://hooks.example.com/claimcheck"

// TestSubscriptionIDsAreNoOracle: a subscription id is the tenant's own
// name. Another tenant making the same id neither fails nor learns the
// first exists, and each sees its own.
func TestSubscriptionIDsAreNoOracle(t *testing.T) {
	t.Parallel()
	f := newFleet(t, "")
	acme, beta := f.key(t, "acme", "admin"), f.key(t, "beta", "admin")
	srv := f.serve(t)
	if a := call(t, http.MethodPost, srv.URL+"/v1/subscriptions", beta, map[string]any{"id": "b-private", "url": hook}); a.Status != http.StatusCreated {
		t.Fatalf("beta's create: %d %s", a.Status, a.Body)
	}
	if a := call(t, http.MethodPost, srv.URL+"/v1/subscriptions", acme, map[string]any{"id": "b-private", "url": hook + "/acme"}); a.Status != http.StatusCreated {
		t.Fatalf("acme's create of the same id: %d %s, want 201 (ids are per tenant)", a.Status, a.Body)
	}
	for key, want := range map[string]string{acme: "/acme", beta: `claimcheck"`} {
		a := call(t, http.MethodGet, srv.URL+"/v1/subscriptions", key, nil)
		if a.Status != http.StatusOK || !strings.Contains(a.Body, want) || strings.Count(a.Body, `"b-private"`) != 1 {
			t.Errorf("list: %d %s, want the tenant's own b-private only", a.Status, a.Body)
		}
	}
	if a := call(t, http.MethodDelete, srv.URL+"/v1/subscriptions/b-private", acme, nil); a.Status != http.StatusNoContent {
		t.Fatalf("acme's delete: %d %s", a.Status, a.Body)
	}
	if a := call(t, http.MethodGet, srv.URL+"/v1/subscriptions", beta, nil); !strings.Contains(a.Body, `"b-private"`) {
		t.Errorf("beta's subscription went with acme's delete: %s", a.Body)
	}
}

// targetConfig is a configured target of tenant acme named id.
func targetConfig(id string, disabled bool) string {
	return fmt.Sprintf(`
subscriptions:
  targets:
    - id: %s
      tenant: acme
      url: %s/ops
      secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
      disabled: %t
`, id, hook, disabled)
}

// TestTenantRowsNeverStopServe: a tenant admin makes the id the operator
// later gives a configured target; every replica must still start, and
// both are listed apart.
func TestTenantRowsNeverStopServe(t *testing.T) {
	t.Parallel()
	f := newFleet(t, "")
	acme := f.key(t, "acme", "admin")
	srv := f.serve(t)
	if a := call(t, http.MethodPost, srv.URL+"/v1/subscriptions", acme, map[string]any{"id": "ops-new", "url": hook}); a.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.Status, a.Body)
	}
	if code := srv.Stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, srv.Logs())
	}
	f.writeConfig(t, targetConfig("ops-new", false))
	srv = f.serve(t)
	a := call(t, http.MethodGet, srv.URL+"/v1/subscriptions", acme, nil)
	if a.Status != http.StatusOK || strings.Count(a.Body, `"source":"config"`) != 1 || strings.Count(a.Body, `"source":"api"`) != 1 {
		t.Errorf("list: %d %s, want the tenant's ops-new and the configured one", a.Status, a.Body)
	}
}

// TestConfiguredTargetsAreReadOnlyToTenants: the operator's disabled
// target stays disabled whatever its tenant's admin asks; each refusal is
// a 403 naming the config file. (There is no tenant call that disables
// a subscription: a tenant deletes its own.)
func TestConfiguredTargetsAreReadOnlyToTenants(t *testing.T) {
	t.Parallel()
	f := newFleet(t, targetConfig("ops-b", true))
	acme := f.key(t, "acme", "admin")
	srv := f.serve(t)
	id := configuredID(t, srv.URL, acme)
	if !strings.HasPrefix(id, "config:") {
		t.Fatalf("the configured target is listed as %q, want config:ops-b", id)
	}
	for _, req := range []struct{ method, path string }{
		{http.MethodPost, "/resume"}, {http.MethodDelete, ""},
	} {
		a := call(t, req.method, srv.URL+"/v1/subscriptions/"+id+req.path, acme, nil)
		if a.Status != http.StatusForbidden || !strings.Contains(a.Body, f.cfg) {
			t.Errorf("%s %s: %d %s, want 403 naming the config file", req.method, req.path, a.Status, a.Body)
		}
	}
	if a := call(t, http.MethodGet, srv.URL+"/v1/subscriptions", acme, nil); !strings.Contains(a.Body, `"enabled":false`) {
		t.Errorf("the configured target after the refused calls: %s", a.Body)
	}
}

// configuredID is the id the tenant's listing gives the configured target.
func configuredID(t *testing.T, url, key string) string {
	t.Helper()
	a := call(t, http.MethodGet, url+"/v1/subscriptions", key, nil)
	i := strings.Index(a.Body, `"id":"`)
	if a.Status != http.StatusOK || i < 0 {
		t.Fatalf("list: %d %s", a.Status, a.Body)
	}
	rest := a.Body[i+len(`"id":"`):]
	return rest[:strings.IndexByte(rest, '"')]
}

// TestSubscriptionLimitPerTenant: a tenant admin cannot fill the store
// with subscriptions (each one costs every replica's dispatcher): past
// tenant_limits.subscriptions the answer is 403 naming the limit, for as
// many tries as it takes, and the listing comes in pages.
func TestSubscriptionLimitPerTenant(t *testing.T) {
	t.Parallel()
	f := newFleet(t, "tenant_limits: { subscriptions: 5 }\n")
	acme, beta := f.key(t, "acme", "admin"), f.key(t, "beta", "admin")
	srv := f.serve(t)
	for i := range 5 {
		if a := call(t, http.MethodPost, srv.URL+"/v1/subscriptions", acme, map[string]any{"url": hook}); a.Status != http.StatusCreated {
			t.Fatalf("subscription %d of 5: %d %s", i+1, a.Status, a.Body)
		}
	}
	for range 50 {
		a := call(t, http.MethodPost, srv.URL+"/v1/subscriptions", acme, map[string]any{"url": hook})
		if a.Status != http.StatusForbidden || !strings.Contains(a.Body, "tenant_limits.subscriptions") {
			t.Fatalf("a subscription past the limit: %d %s, want 403 naming tenant_limits.subscriptions", a.Status, a.Body)
		}
	}
	// Another tenant's allowance is its own.
	if a := call(t, http.MethodPost, srv.URL+"/v1/subscriptions", beta, map[string]any{"url": hook}); a.Status != http.StatusCreated {
		t.Fatalf("beta's first subscription: %d %s", a.Status, a.Body)
	}
	first := call(t, http.MethodGet, srv.URL+"/v1/subscriptions?limit=2", acme, nil)
	if first.Status != http.StatusOK || strings.Count(first.Body, `"url"`) != 2 || !strings.Contains(first.Body, `"next"`) {
		t.Errorf("the first page of 2: %d %s", first.Status, first.Body)
	}
}
