package server_test

import (
	"encoding/json"
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
// answer names no tenant, namespace or claim.
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
			if k != "now" && k != "oldest_due" && k != "lag_seconds" && k != "due" && k != "due_bound" {
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
		p := c.Namespaces["a2"]
		p.TTL.MaxAge = claimcheck.Duration(time.Hour)
		c.Namespaces["a2"] = p
	})
	admin := b.key(t, "acme", auth.RoleAdmin, "")
	read := func() api.SweeperStatus {
		t.Helper()
		resp, body := b.do(t, admin, http.MethodGet, "/v1/sweeper", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/sweeper: %s %s", resp.Status, body)
		}
		var st api.SweeperStatus
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
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
