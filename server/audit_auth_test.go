package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// TestAuditActorsOverHTTP: with auth on, the audit trail names the key
// that did each step; reading it takes an admin key of the claim's
// tenant, and another tenant's admin gets not_found.
func TestAuditActorsOverHTTP(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	producer := b.key(t, "acme", auth.RoleProducer, "a1")
	consumer := b.key(t, "acme", auth.RoleConsumer, "a1")
	admin := b.key(t, "acme", auth.RoleAdmin, "")
	other := b.key(t, "beta", auth.RoleAdmin, "")
	id := func(token string) string {
		id, _, _ := auth.ParseToken(token)
		return id
	}

	resp, body := b.do(t, producer, http.MethodPut, "/v1/namespaces/a1/claims", strings.NewReader("audited payload"))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("put: %s %s", resp.Status, body)
	}
	ref, err := claimcheck.ParseRef(body)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := b.do(t, consumer, http.MethodGet, "/v1/claims/"+ref.ID, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("redeem: %s %s", resp.Status, body)
	}
	if resp, body := b.do(t, consumer, http.MethodPost, "/v1/claims/"+ref.ID+"/release", strings.NewReader(`{"consumer":"billing"}`), "Content-Type", "application/json"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("release: %s %s", resp.Status, body)
	}
	if resp, body := b.do(t, admin, http.MethodDelete, "/v1/claims/"+ref.ID, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %s %s", resp.Status, body)
	}

	resp, body = b.do(t, admin, http.MethodGet, "/v1/claims/"+ref.ID+"/events", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %s %s", resp.Status, body)
	}
	var page api.EventsPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	want := []string{"created/" + id(producer), "redeemed/" + id(consumer), "first_redeemed/" + id(consumer), "released/" + id(consumer), "all_released/" + id(consumer), "deleted/" + id(admin)}
	var got []string
	for _, e := range page.Events {
		got = append(got, e.Kind+"/"+e.Actor)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("events %q, want %q", got, want)
	}

	for _, tc := range []struct {
		token string
		path  string
		want  int
	}{
		{consumer, "/v1/claims/" + ref.ID + "/events", http.StatusForbidden},
		{other, "/v1/claims/" + ref.ID + "/events", http.StatusNotFound},
		{other, "/v1/namespaces/a1/events", http.StatusNotFound},
		{admin, "/v1/namespaces/a1/events", http.StatusOK},
	} {
		resp, body := b.do(t, tc.token, http.MethodGet, tc.path, nil)
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s: %s %s, want %d", tc.path, resp.Status, body, tc.want)
		}
	}
}

// TestAdminEventsOverHTTP: holds and keys changed over HTTP are in the
// audit trail with the admin key that changed them: claim holds in the
// claim's and the namespace's events, namespace holds in the namespace's,
// keys in the tenant's (GET /v1/events), which only the tenant's own
// admin keys may read.
func TestAdminEventsOverHTTP(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	admin := b.key(t, "acme", auth.RoleAdmin, "")
	consumer := b.key(t, "acme", auth.RoleConsumer, "")
	limitedAdmin := b.key(t, "acme", auth.RoleAdmin, "a1")
	other := b.key(t, "beta", auth.RoleAdmin, "")
	adminID, _, _ := auth.ParseToken(admin)
	ref := b.claim(t, "a1")
	mustDo := func(method, path, body string, want int) []byte {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		resp, data := b.do(t, admin, method, path, r, "Content-Type", "application/json")
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %s %s, want %d", method, path, resp.Status, data, want)
		}
		return data
	}
	mustDo(http.MethodPut, "/v1/claims/"+ref.ID+"/hold", `{"reason":"case 42"}`, http.StatusNoContent)
	mustDo(http.MethodDelete, "/v1/claims/"+ref.ID+"/hold", "", http.StatusNoContent)
	mustDo(http.MethodDelete, "/v1/claims/"+ref.ID+"/hold", "", http.StatusNoContent) // not set: logs nothing
	mustDo(http.MethodPut, "/v1/namespaces/a1/hold", `{"reason":"audit 7"}`, http.StatusNoContent)
	mustDo(http.MethodDelete, "/v1/namespaces/a1/hold", "", http.StatusNoContent)
	var created api.CreatedKey
	if err := json.Unmarshal(mustDo(http.MethodPost, "/v1/keys", `{"role":"producer","namespace":"a2"}`, http.StatusCreated), &created); err != nil {
		t.Fatal(err)
	}
	mustDo(http.MethodDelete, "/v1/keys/"+created.ID, "", http.StatusOK)
	mustDo(http.MethodDelete, "/v1/keys/"+created.ID, "", http.StatusOK) // revoked already: logs nothing

	// events reads a page and keeps the events the admin key caused.
	events := func(token, path string) []string {
		t.Helper()
		resp, body := b.do(t, token, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, body)
		}
		var page api.EventsPage
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range page.Events {
			if e.Actor == adminID {
				out = append(out, e.Kind+"/"+e.Reason+"/"+e.Detail+"/"+e.Tenant)
			}
		}
		return out
	}
	keyDetail := "key " + created.ID + "; tenant acme; role producer"
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/v1/claims/" + ref.ID + "/events", []string{"hold_set/claim/case 42/", "hold_cleared/claim/case 42/"}},
		{"/v1/namespaces/a1/events", []string{"hold_set/claim/case 42/", "hold_cleared/claim/case 42/",
			"hold_set/namespace/audit 7/", "hold_cleared/namespace/audit 7/"}},
		{"/v1/namespaces/a2/events", []string{"key_created//" + keyDetail + "/acme", "key_revoked//" + keyDetail + "/acme"}},
		{"/v1/events", []string{"key_created//" + keyDetail + "/acme", "key_revoked//" + keyDetail + "/acme"}},
		{"/v1/events?tenant=acme", []string{"key_created//" + keyDetail + "/acme", "key_revoked//" + keyDetail + "/acme"}},
	} {
		if got := events(admin, tc.path); strings.Join(got, " | ") != strings.Join(tc.want, " | ") {
			t.Errorf("GET %s: events %q, want %q", tc.path, got, tc.want)
		}
	}
	// Another tenant's admin sees none of it; naming acme is not_found,
	// and a consumer key may not read events at all.
	if got := events(other, "/v1/events"); len(got) != 0 {
		t.Errorf("beta's events hold acme's: %q", got)
	}
	for _, tc := range []struct {
		token, path string
		want        int
	}{
		{other, "/v1/events?tenant=acme", http.StatusNotFound},
		{consumer, "/v1/events", http.StatusForbidden},
		{limitedAdmin, "/v1/events", http.StatusForbidden}, // would show the other namespaces' keys
		{admin, "/v1/events?tenant=Bad!", http.StatusNotFound},
		{admin, "/v1/events?tenants=acme", http.StatusBadRequest},
	} {
		if resp, body := b.do(t, tc.token, http.MethodGet, tc.path, nil); resp.StatusCode != tc.want {
			t.Errorf("GET %s: %s %s, want %d", tc.path, resp.Status, body, tc.want)
		}
	}
}

// TestTenantEventsWithoutAuth: without auth, GET /v1/events reads the
// tenant named by ?tenant=, the default tenant when none is named, through
// the Go client as through plain HTTP.
func TestTenantEventsWithoutAuth(t *testing.T) {
	b := setup(t)
	keys := auth.New(b.meta, nil)
	ctx := claimcheck.WithActor(context.Background(), "cli:ops")
	for _, tenant := range []string{claimcheck.DefaultTenant, "acme"} {
		if _, _, err := keys.Create(ctx, auth.CreateParams{Tenant: tenant, Role: auth.RoleAdmin}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(b.http.URL, client.WithHTTPClient(b.http.Client()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"", "acme"} {
		es, err := c.TenantEvents(context.Background(), tenant, claimcheck.EventQuery{})
		want := tenant
		if want == "" {
			want = claimcheck.DefaultTenant
		}
		if err != nil || len(es) != 1 || es[0].Kind != "key_created" || es[0].Tenant != want || es[0].Actor != "cli:ops" {
			t.Errorf("TenantEvents(%q) = %+v, %v; want the key_created of tenant %s", tenant, es, err, want)
		}
	}
	if _, err := c.TenantEvents(context.Background(), "Bad!", claimcheck.EventQuery{}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("TenantEvents(Bad!) = %v, want invalid_argument", err)
	}
	if resp, body := b.do(t, http.MethodGet, "/v1/events?tenant=Bad!", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /v1/events?tenant=Bad!: %s %s, want 400", resp.Status, body)
	}
}
