package server_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
)

// TestListAndExtendWithAuth: producer and admin keys of a namespace's
// tenant list and extend its claims through the Go client; a consumer key
// may not; a key of another tenant sees nothing (404, like an unknown
// namespace or claim).
func TestListAndExtendWithAuth(t *testing.T) {
	b := setupAuthWith(t, server.Limits{}, func(c *engine.Config) {
		c.Namespaces["a2"] = claimcheck.Policy{Tenant: "acme",
			TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(time.Hour), MaxLifetime: claimcheck.Duration(48 * time.Hour)}}
	})
	ctx := context.Background()
	cl := func(token string) *client.Client {
		c, err := client.New(b.http.URL, client.WithAPIKey(token))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	producer := cl(b.key(t, "acme", auth.RoleProducer, ""))
	admin := cl(b.key(t, "acme", auth.RoleAdmin, ""))
	consumer := cl(b.key(t, "acme", auth.RoleConsumer, ""))
	other := cl(b.key(t, "beta", auth.RoleAdmin, ""))
	limited := cl(b.key(t, "acme", auth.RoleProducer, "a1"))

	var refs []claimcheck.Ref
	for i := range 12 {
		labels := map[string]string{"run": "r" + string(rune('0'+i%3)), "wf": "w"}
		ref, err := producer.Put(ctx, "a2", bytes.NewReader([]byte(strings.Repeat("x", 100+i))), claimcheck.PutOptions{Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}

	// Paging through run=r1 with the producer key: 4 claims, 3 pages.
	var got []string
	opts := claimcheck.ListOptions{Labels: map[string]string{"run": "r1", "wf": "w"}, State: claimcheck.StateActive, Limit: 2}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("listing does not end")
		}
		page, err := producer.List(ctx, "a2", opts)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, c := range page.Claims {
			if c.Labels["run"] != "r1" || c.Ref.Namespace != "a2" || c.State != claimcheck.StateActive {
				t.Fatalf("listed %+v", c)
			}
			got = append(got, c.Ref.ID)
		}
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	want := map[string]bool{refs[1].ID: true, refs[4].ID: true, refs[7].ID: true, refs[10].ID: true}
	if len(got) != 4 {
		t.Fatalf("run=r1: %v, want the 4 claims %v", got, want)
	}
	for _, id := range got {
		if !want[id] {
			t.Fatalf("run=r1 listed %s, not one of %v", id, want)
		}
	}
	if page, err := admin.List(ctx, "a2", claimcheck.ListOptions{Order: claimcheck.ListExpiring, Limit: 1000}); err != nil || len(page.Claims) != 12 {
		t.Fatalf("admin, expiring: %d claims, %v", len(page.Claims), err)
	}

	// Who may not.
	if _, err := consumer.List(ctx, "a2", claimcheck.ListOptions{}); !errors.Is(err, claimcheck.ErrPermissionDenied) {
		t.Errorf("consumer List: %v, want permission denied", err)
	}
	if _, err := other.List(ctx, "a2", claimcheck.ListOptions{}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("other tenant's List: %v, want not found", err)
	}
	if _, err := limited.List(ctx, "a2", claimcheck.ListOptions{}); !errors.Is(err, claimcheck.ErrPermissionDenied) {
		t.Errorf("key limited to a1, List a2: %v, want permission denied", err)
	}
	if page, err := other.List(ctx, "b1", claimcheck.ListOptions{}); err != nil || len(page.Claims) != 0 {
		t.Errorf("other tenant lists its own namespace: %d claims, %v", len(page.Claims), err)
	}

	// Extend.
	ref := refs[0]
	info, err := producer.Extend(ctx, ref, claimcheck.ExtendOptions{By: 24 * time.Hour})
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if !info.Ref.ExpiresAt.Equal(ref.ExpiresAt.Add(24 * time.Hour)) {
		t.Fatalf("extended expiry %v, want %v", info.Ref.ExpiresAt, ref.ExpiresAt.Add(24*time.Hour))
	}
	at := ref.CreatedAt.Add(30 * time.Hour)
	if info, err := admin.Extend(ctx, ref, claimcheck.ExtendOptions{ExpiresAt: at}); err != nil || !info.Ref.ExpiresAt.Equal(at) {
		t.Fatalf("admin Extend to %v: %v, %v", at, info.Ref.ExpiresAt, err)
	}
	_, err = producer.Extend(ctx, ref, claimcheck.ExtendOptions{ExpiresAt: ref.CreatedAt.Add(49 * time.Hour)})
	if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "ttl.max_lifetime 48h0m0s") {
		t.Fatalf("Extend past max_lifetime: %v", err)
	}
	if _, err := consumer.Extend(ctx, ref, claimcheck.ExtendOptions{By: time.Hour}); !errors.Is(err, claimcheck.ErrPermissionDenied) {
		t.Errorf("consumer Extend: %v, want permission denied", err)
	}
	if _, err := other.Extend(ctx, ref, claimcheck.ExtendOptions{By: time.Hour}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("other tenant's Extend: %v, want not found", err)
	}
	if err := producer.Delete(ctx, refs[1]); err != nil {
		t.Fatal(err)
	}
	_, err = producer.Extend(ctx, refs[1], claimcheck.ExtendOptions{By: time.Hour})
	var gone *claimcheck.GoneError
	if !errors.As(err, &gone) || gone.Reason != claimcheck.ReasonDeleted {
		t.Errorf("Extend of a deleted claim: %v, want gone (deleted)", err)
	}

	// Bad requests name the parameter or field.
	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/v1/namespaces/a2/claims?labels=a%3Db", "", "query parameter labels"},
		{"GET", "/v1/namespaces/a2/claims?label=ab", "", "query parameter label"},
		{"GET", "/v1/namespaces/a2/claims?limit=0", "", "query parameter limit"},
		{"GET", "/v1/namespaces/a2/claims?state=a&state=b", "", "given 2 times"},
		{"GET", "/v1/namespaces/a2/claims?expires_before=tomorrow", "", "query parameter expires_before"},
		{"POST", "/v1/claims/" + ref.ID + "/extend", `{}`, "give expires_at or by"},
		{"POST", "/v1/claims/" + ref.ID + "/extend", `{"by":"soon"}`, "extend body: by"},
		{"POST", "/v1/claims/" + ref.ID + "/extend", `{"until":"x"}`, "unknown field"},
	} {
		resp, body := b.do(t, b.key(t, "acme", auth.RoleAdmin, ""), tc.method, tc.path, strings.NewReader(tc.body), "Content-Type", "application/json")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %s %s: %d %s, want 400 naming %q", tc.method, tc.path, tc.body, resp.StatusCode, body, tc.want)
		}
	}
}
