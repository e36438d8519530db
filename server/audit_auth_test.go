package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
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
	if resp, body := b.do(t, consumer, http.MethodPost, "/v1/claims/"+ref.ID+"/release", strings.NewReader(`{"consumer":"billing"}`)); resp.StatusCode != http.StatusNoContent {
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
	want := []string{"created/" + id(producer), "redeemed/" + id(consumer), "released/" + id(consumer), "deleted/" + id(admin)}
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
