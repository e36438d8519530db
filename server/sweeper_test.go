package server_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// TestSweeperStatusNeedsATenantWideAdminKey: GET /v1/sweeper is an admin
// route of the key's tenant like GET /v1/events: no key is 401, a
// producer's key or an admin key limited to one namespace is 403, and the
// answer names no tenant or claim, and namespaces only in
// due_by_namespace (TestSweeperStatusDueByNamespaceIsTenantScoped).
func TestSweeperStatusNeedsATenantWideAdminKey(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	for _, c := range []struct {
		name, key string
		want      int
	}{
		{"no key", "", http.StatusUnauthorized},
		{"producer", b.key(t, "acme", auth.RoleProducer, ""), http.StatusForbidden},
		{"admin of a1 only", b.key(t, "acme", auth.RoleAdmin, "a1"), http.StatusForbidden},
		{"admin of acme", b.key(t, "acme", auth.RoleAdmin, ""), http.StatusOK},
		{"admin of beta", b.key(t, "beta", auth.RoleAdmin, ""), http.StatusOK},
	} {
		resp, body := b.do(t, c.key, http.MethodGet, "/v1/sweeper", nil)
		if resp.StatusCode != c.want {
			t.Errorf("%s: %s %s; want %d", c.name, resp.Status, body, c.want)
			continue
		}
		if c.want != http.StatusOK {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatal(err)
		}
		for k := range fields {
			switch k {
			case "now", "oldest_due", "lag_seconds", "due", "due_bound", "due_by_namespace", "due_by_namespace_capped":
			default:
				t.Errorf("%s: the answer has %q: %s", c.name, k, body)
			}
		}
	}
}

// TestSweeperStatusMeasuresTheOldestDue: the answer's oldest_due is the
// earliest due time of the store (a claim's expiry here) and lag_seconds
// its age once it has passed; due counts what is due by the store's
// clock, bounded by due_bound; with nothing due there is no oldest_due,
// no lag and nothing due.
func TestSweeperStatusMeasuresTheOldestDue(t *testing.T) {
	start := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC) // long past: the claim is overdue by the server's clock
	fake := clock.NewFake(start)
	b := setupAuthWith(t, server.Limits{}, func(c *engine.Config) {
		c.Clock = fake
		c.Sweeper.Disabled = true
		for _, ns := range []string{"a2", "b1"} {
			p := c.Namespaces[ns]
			p.TTL.MaxAge = claimcheck.Duration(time.Hour)
			c.Namespaces[ns] = p
		}
	})
	admin := b.key(t, "acme", auth.RoleAdmin, "")
	read := func() api.SweeperStatus { return readSweeper(t, b, admin) }
	if st := read(); st.OldestDue != nil || st.LagSeconds != 0 || st.Due != 0 || st.DueBound != engine.DueBacklogBound {
		t.Fatalf("an empty store: %+v; want nothing due, counted up to %d", st, engine.DueBacklogBound)
	}
	resp, body := b.do(t, admin, http.MethodPut, "/v1/namespaces/a2/claims", strings.NewReader("payload"))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("put: %s %s", resp.Status, body)
	}
	if st := read(); st.Due != 0 {
		t.Fatalf("due %d before the claim's expiry; want 0", st.Due)
	}
	fake.Advance(2 * time.Hour)
	st := read()
	if st.Due != 1 {
		t.Fatalf("due %d after the claim's expiry (the sweeper off); want 1", st.Due)
	}
	if st.OldestDue == nil || !st.OldestDue.Equal(start.Add(time.Hour)) {
		t.Fatalf("oldest_due %v; want the claim's expiry %v", st.OldestDue, start.Add(time.Hour))
	}
	if want := st.Now.Sub(*st.OldestDue).Seconds(); st.LagSeconds != want || want <= 0 {
		t.Fatalf("lag_seconds %v; want now - oldest_due = %v", st.LagSeconds, want)
	}
}

func readSweeper(t *testing.T, b *authBundle, key string) api.SweeperStatus {
	t.Helper()
	resp, body := b.do(t, key, http.MethodGet, "/v1/sweeper", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/sweeper: %s %s", resp.Status, body)
	}
	var st api.SweeperStatus
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSweeperStatusDueByNamespaceIsTenantScoped: due_by_namespace counts
// the due claims per namespace, and each tenant's admin sees only its own
// namespaces' counts, while the store-wide due counts them all.
func TestSweeperStatusDueByNamespaceIsTenantScoped(t *testing.T) {
	fake := clock.NewFake(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))
	b := setupAuthWith(t, server.Limits{}, func(c *engine.Config) {
		c.Clock = fake
		c.Sweeper.Disabled = true
		for _, ns := range []string{"a2", "b1"} {
			p := c.Namespaces[ns]
			p.TTL.MaxAge = claimcheck.Duration(time.Hour)
			c.Namespaces[ns] = p
		}
	})
	acme, beta := b.key(t, "acme", auth.RoleAdmin, ""), b.key(t, "beta", auth.RoleAdmin, "")
	put := func(key, ns string) {
		t.Helper()
		resp, body := b.do(t, key, http.MethodPut, "/v1/namespaces/"+ns+"/claims", strings.NewReader("payload"))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("put in %s: %s %s", ns, resp.Status, body)
		}
	}
	put(acme, "a2")
	put(acme, "a2")
	put(beta, "b1")
	fake.Advance(2 * time.Hour)
	st := readSweeper(t, b, acme)
	if st.Due != 3 || !maps.Equal(st.DueByNamespace, map[string]int64{"a2": 2}) || st.DueByNamespaceCapped {
		t.Errorf("acme's admin: due %d, by namespace %v (capped %v); want 3 store-wide, a2: 2 only, not capped",
			st.Due, st.DueByNamespace, st.DueByNamespaceCapped)
	}
	st = readSweeper(t, b, beta)
	if !maps.Equal(st.DueByNamespace, map[string]int64{"b1": 1}) {
		t.Errorf("beta's admin: by namespace %v; want b1: 1 only", st.DueByNamespace)
	}
}
