package engine_test

import (
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/egress"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

// FuzzSubscriptionSpec throws arbitrary subscription bodies at a real
// store, as a tenant admin's POST /v1/subscriptions does. Whatever it
// accepts must hold the rules a tenant cannot bend: a target the default
// address policy allows, an id of the documented form, the caller's own
// tenant, no secret in the listing, and nothing visible to another tenant.
func FuzzSubscriptionSpec(f *testing.F) {
	for _, seed := range []string{
		`{"url":"https://hooks.example.com/x"}`,
		`{"id":"b-private","url":"https://hooks.example.com/x","types":["created"],"namespaces":["orders"],"labels":{"a":"b"}}`,
		`{"url":"http://[64:ff9b::a9fe:a9fe]/"}`,
		`{"url":"http://0x7f000001:8080/"}`,
		`{"url":"http://localhost.:9/"}`,
		`{"url":"https://hooks.example.com:181810000/"}`,
		`{"url":"https://user:pw@hooks.example.com/"}`,
		`{"url":"https://hooks.example.com/","events_per_request":5000}`,
		`{"url":"https://hooks.example.com/","secret":"whsec_short"}`,
		`{"id":"../x","url":"https://hooks.example.com/"}`,
		`{"url":"https://[fe80::1%25eth0]/"}`,
	} {
		f.Add([]byte(seed))
	}
	s := enginetest.Open(f, engine.Config{Tenants: map[string]claimcheck.TenantPolicy{"acme": {}, "beta": {}}})
	idForm := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	f.Fuzz(func(t *testing.T, body []byte) {
		var spec claimcheck.SubscriptionSpec
		if json.Unmarshal(body, &spec) != nil {
			return
		}
		ctx := context.Background()
		sub, err := s.CreateSubscription(ctx, "acme", spec)
		if err != nil {
			return
		}
		defer func() { _ = s.DeleteSubscription(ctx, "acme", sub.ID) }()
		if err := (egress.Policy{}).CheckURL("url", sub.URL); err != nil {
			t.Fatalf("accepted %q, which the address policy refuses: %v", sub.URL, err)
		}
		if u, err := url.Parse(sub.URL); err != nil || u.User != nil {
			t.Fatalf("accepted %q: credentials in the URL", sub.URL)
		}
		if !idForm.MatchString(sub.ID) || sub.Tenant != "acme" {
			t.Fatalf("accepted id %q of tenant %q", sub.ID, sub.Tenant)
		}
		list, err := s.Subscriptions(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list {
			if l.Secret != "" {
				t.Fatalf("the listing carries the secret of %s", l.ID)
			}
		}
		others, err := s.Subscriptions(ctx, "beta")
		if err != nil {
			t.Fatal(err)
		}
		if len(others) != 0 {
			t.Fatalf("tenant beta sees %d subscriptions of acme", len(others))
		}
	})
}
