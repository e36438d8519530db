package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
)

func jsonBody(s string) *strings.Reader { return strings.NewReader(s) }

// TestSubscriptionIDsAreTheTenants: acme may name a subscription as beta
// named one of its own; before, acme's create answered 400 `id:
// "b-private" is taken`, telling acme what beta had (ADR 0269).
func TestSubscriptionIDsAreTheTenants(t *testing.T) {
	b := setupSubscriptions(t)
	acme := b.key(t, "acme", auth.RoleAdmin, "")
	beta := b.key(t, "beta", auth.RoleAdmin, "")
	for _, key := range []string{beta, acme} {
		resp, body := b.do(t, key, http.MethodPost, "/v1/subscriptions", jsonBody(`{"id":"b-private","url":"http://127.0.0.1:9/"}`),
			"Content-Type", "application/json")
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create b-private: %s %s", resp.Status, body)
		}
	}
}

// TestConfiguredTargetsReadOnlyOverHTTP: the operator's target, disabled
// in the config, is listed to its tenant as config:ops-b; resuming or
// deleting it answers 403 naming the config file (before, resume answered
// 204 and delivery followed, while delete answered 404).
func TestConfiguredTargetsReadOnlyOverHTTP(t *testing.T) {
	b := setupAuthWith(t, server.Limits{}, func(c *engine.Config) {
		c.Subscriptions.AllowLoopback = true
		c.Subscriptions.Targets = []dispatch.Target{{ID: "ops-b", Tenant: "beta", URL: "http://127.0.0.1:9/ops",
			Secret: dispatch.NewSecret(), Disabled: true}}
	})
	beta := b.key(t, "beta", auth.RoleAdmin, "")
	resp, body := b.do(t, beta, http.MethodGet, "/v1/subscriptions", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"id":"config:ops-b"`) || !strings.Contains(string(body), `"enabled":false`) {
		t.Fatalf("list: %s %s", resp.Status, body)
	}
	for _, op := range []struct{ method, path string }{
		{http.MethodPost, "/v1/subscriptions/config:ops-b/resume"},
		{http.MethodDelete, "/v1/subscriptions/config:ops-b"},
	} {
		resp, body := b.do(t, beta, op.method, op.path, nil)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "config file (subscriptions.targets)") {
			t.Errorf("%s %s: %s %s; want 403 naming the config file", op.method, op.path, resp.Status, body)
		}
	}
	if resp, body := b.do(t, beta, http.MethodPost, "/v1/subscriptions/ops-b/resume", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("resume ops-b: %s %s; want 404 (the target's id is config:ops-b)", resp.Status, body)
	}
	resp, body = b.do(t, beta, http.MethodGet, "/v1/subscriptions", nil)
	if !strings.Contains(string(body), `"enabled":false`) {
		t.Errorf("after the refusals: %s %s; want the target still disabled", resp.Status, body)
	}
}

// TestSubscriptionsPagedOverHTTP: GET /v1/subscriptions answers pages of
// ?limit= with the cursor of the next, as the claims' listing does, and
// the tenant's limit refuses a create past it, quota_exceeded naming
// tenant_limits.subscriptions.
func TestSubscriptionsPagedOverHTTP(t *testing.T) {
	b := setupAuthWith(t, server.Limits{}, func(c *engine.Config) {
		c.Subscriptions.AllowLoopback = true
		c.TenantLimits.Subscriptions = 5
	})
	acme := b.key(t, "acme", auth.RoleAdmin, "")
	for i := range 6 {
		resp, body := b.do(t, acme, http.MethodPost, "/v1/subscriptions", jsonBody(fmt.Sprintf(`{"id":"s%d","url":"http://127.0.0.1:9/"}`, i)),
			"Content-Type", "application/json")
		want := http.StatusCreated
		if i == 5 {
			want = http.StatusForbidden
			if !strings.Contains(string(body), "quota_exceeded") || !strings.Contains(string(body), "tenant_limits.subscriptions") {
				t.Errorf("the 6th: %s, want quota_exceeded naming tenant_limits.subscriptions", body)
			}
		}
		if resp.StatusCode != want {
			t.Fatalf("create s%d: %s %s, want %d", i, resp.Status, body, want)
		}
	}
	var ids []string
	pages := 0
	for cursor := ""; ; pages++ {
		resp, body := b.do(t, acme, http.MethodGet, "/v1/subscriptions?limit=2&cursor="+cursor, nil)
		var page claimcheck.SubscriptionPage
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Subscriptions) > 2 {
			t.Fatalf("page after %q: %s %s", cursor, resp.Status, body)
		}
		for _, s := range page.Subscriptions {
			ids = append(ids, s.ID)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if strings.Join(ids, ",") != "s0,s1,s2,s3,s4" || pages != 2 {
		t.Errorf("pages: %v in %d pages after the first, want s0..s4 in 3 pages", ids, pages)
	}
	if resp, body := b.do(t, acme, http.MethodGet, "/v1/subscriptions?limit=0", nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "limit") {
		t.Errorf("limit=0: %s %s", resp.Status, body)
	}
}

// TestEventStreamsPerTenant: past http.max_event_streams_per_tenant a
// tenant's next stream is refused 429 naming the key; another tenant is
// not held by it, and a closed stream makes room.
func TestEventStreamsPerTenant(t *testing.T) {
	b := setupAuthWith(t, server.Limits{MaxEventStreamsPerTenant: 2}, func(c *engine.Config) {
		c.Subscriptions.Settle = 20 * time.Millisecond
	})
	acme := b.key(t, "acme", auth.RoleAdmin, "")
	beta := b.key(t, "beta", auth.RoleAdmin, "")
	first := openStream(t, b, acme, "", "")
	openStream(t, b, acme, "", "")
	resp, body := b.do(t, acme, http.MethodGet, "/v1/events/stream", nil)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "http.max_event_streams_per_tenant") {
		t.Fatalf("acme's 3rd stream: %s %s; want 429 naming http.max_event_streams_per_tenant", resp.Status, body)
	}
	openStream(t, b, beta, "", "")
	// The server ends a stream once it sees its client gone.
	first.resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.http.URL+"/v1/events/stream", nil)
		req.Header.Set("Authorization", "Bearer "+acme)
		resp, err := b.http.Client().Do(req)
		if err != nil {
			t.Fatalf("no stream slot came free: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAPIKeysLimitedAndPaged: past http.max_api_keys_per_tenant a
// tenant's admin makes no more keys (403 quota_exceeded naming the key;
// before, there was no bound), a revoke makes room, and GET /v1/keys
// answers pages with the cursor of the next (ADR 0270).
func TestAPIKeysLimitedAndPaged(t *testing.T) {
	b := setupAuthWith(t, server.Limits{MaxAPIKeysPerTenant: 4}, nil)
	admin := b.key(t, "acme", auth.RoleAdmin, "")
	b.key(t, "beta", auth.RoleAdmin, "")
	var made []string
	for i := range 4 {
		resp, body := b.do(t, admin, http.MethodPost, "/v1/keys", jsonBody(`{"role":"producer"}`), "Content-Type", "application/json")
		if i == 3 {
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "http.max_api_keys_per_tenant") {
				t.Fatalf("the 5th key of acme: %s %s; want 403 naming http.max_api_keys_per_tenant", resp.Status, body)
			}
			continue
		}
		var k struct{ ID string }
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &k) != nil {
			t.Fatalf("key %d: %s %s", i, resp.Status, body)
		}
		made = append(made, k.ID)
	}
	if resp, body := b.do(t, admin, http.MethodDelete, "/v1/keys/"+made[0], nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %s %s", resp.Status, body)
	}
	if resp, body := b.do(t, admin, http.MethodPost, "/v1/keys", jsonBody(`{"role":"producer"}`), "Content-Type", "application/json"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("after a revoke: %s %s", resp.Status, body)
	}
	n, pages := 0, 0
	for cursor := ""; ; {
		resp, body := b.do(t, admin, http.MethodGet, "/v1/keys?limit=2&cursor="+cursor, nil)
		var page struct {
			Keys []struct{ Tenant string }
			Next string
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Keys) > 2 {
			t.Fatalf("keys after %q: %s %s", cursor, resp.Status, body)
		}
		for _, k := range page.Keys {
			if k.Tenant != "acme" {
				t.Fatalf("another tenant's key listed: %s", body)
			}
		}
		n, pages = n+len(page.Keys), pages+1
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if n != 5 || pages != 3 {
		t.Errorf("listed %d keys in %d pages, want 5 (the revoked one too) in 3", n, pages)
	}
	if resp, body := b.do(t, admin, http.MethodGet, "/v1/keys?cursor=nonsense", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad cursor: %s %s", resp.Status, body)
	}
}

// TestNamespacesPaged: GET /v1/namespaces answers pages by name, of the
// namespaces the key sees only (ADR 0270).
func TestNamespacesPaged(t *testing.T) {
	b := setupAuthWith(t, server.Limits{}, nil)
	acme := b.key(t, "acme", auth.RoleAdmin, "")
	var names []string
	for cursor := ""; ; {
		resp, body := b.do(t, acme, http.MethodGet, "/v1/namespaces?limit=1&cursor="+cursor, nil)
		var page struct {
			Namespaces []struct{ Name string }
			Next       string
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Namespaces) > 1 {
			t.Fatalf("namespaces after %q: %s %s", cursor, resp.Status, body)
		}
		for _, ns := range page.Namespaces {
			names = append(names, ns.Name)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if strings.Join(names, ",") != "a1,a2" {
		t.Errorf("acme's namespaces in pages: %v, want a1,a2 (not beta's b1)", names)
	}
}
