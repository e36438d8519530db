package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
	"github.com/claimcheck/claimcheck/sweep"
)

// deniedDeletes is a blob store whose deletes fail, like a bucket whose
// policy forbids DeleteObject.
type deniedDeletes struct{ blob.Store }

func (deniedDeletes) Delete(context.Context, string) error {
	return errors.New("injected: access denied")
}

// setupDeadLetters is setupAuth (tenants acme: a1, a2; beta: b1) over a
// file store whose deletes fail, with one dead letter per namespace
// given in nss. It returns the dead letters' ids by namespace.
func setupDeadLetters(t *testing.T, nss ...string) (*authBundle, map[string][]string) {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(time.Now())
	b := setupAuthWith(t, server.Limits{}, func(cfg *engine.Config) {
		files, err := blob.Open(ctx, "file://"+t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { files.Close() })
		cfg.BlobStore = deniedDeletes{files}
		cfg.Clock = clk
		cfg.Sweeper = sweep.Config{Disabled: true, MaxAttempts: 1}
	})
	for _, ns := range nss {
		if err := b.store.Delete(ctx, b.claim(t, ns)); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Hour) // past the grace period
	if res, err := b.store.SweepOnce(ctx, 0); err != nil || res.DeleteFailures != len(nss) {
		t.Fatalf("sweep: %+v %v; want %d failed deletes", res, err, len(nss))
	}
	ids := map[string][]string{}
	page, err := b.store.DeadLetters(ctx, claimcheck.DeadLetterQuery{})
	if err != nil || len(page.DeadLetters) != len(nss) {
		t.Fatalf("dead letters = %+v, %v; want %d", page, err, len(nss))
	}
	for _, d := range page.DeadLetters {
		ids[d.Namespace] = append(ids[d.Namespace], d.BlobID)
	}
	return b, ids
}

func blobIDs(ds []claimcheck.DeadLetter) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.BlobID
	}
	slices.Sort(out)
	return out
}

// TestDeadLettersHTTPTenancy: each tenant's admin lists and retries the
// dead letters of its own namespaces only; a namespace-limited admin
// those of its namespace; producers are refused; another tenant's dead
// letter is not_found exactly like an unknown one.
func TestDeadLettersHTTPTenancy(t *testing.T) {
	ctx := context.Background()
	b, ids := setupDeadLetters(t, "a1", "a1", "a2", "b1")
	connect := func(token string) *client.Client {
		c, err := client.New(b.http.URL, client.WithAPIKey(token))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	acme := connect(b.key(t, "acme", auth.RoleAdmin, ""))
	acmeA2 := connect(b.key(t, "acme", auth.RoleAdmin, "a2"))
	betaToken := b.key(t, "beta", auth.RoleAdmin, "")
	beta := connect(betaToken)
	producer := connect(b.key(t, "acme", auth.RoleProducer, ""))

	list := func(c *client.Client, q claimcheck.DeadLetterQuery) []string {
		t.Helper()
		page, err := c.DeadLetters(ctx, q)
		if err != nil {
			t.Fatalf("DeadLetters(%+v): %v", q, err)
		}
		return blobIDs(page.DeadLetters)
	}
	acmeIDs := slices.Sorted(slices.Values(append(slices.Clone(ids["a1"]), ids["a2"]...)))
	if got := list(acme, claimcheck.DeadLetterQuery{}); !slices.Equal(got, acmeIDs) {
		t.Errorf("acme admin lists %v, want %v (a1 and a2, never b1)", got, acmeIDs)
	}
	if got := list(beta, claimcheck.DeadLetterQuery{}); !slices.Equal(got, ids["b1"]) {
		t.Errorf("beta admin lists %v, want %v", got, ids["b1"])
	}
	// A client's tenant is the key's: asking for another one's is not_found.
	if _, err := acme.DeadLetters(ctx, claimcheck.DeadLetterQuery{Tenant: "beta"}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("acme admin asking for tenant beta: %v, want not_found", err)
	}
	if _, err := acme.DeadLetters(ctx, claimcheck.DeadLetterQuery{Namespace: "b1"}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("acme admin asking for namespace b1: %v, want not_found", err)
	}
	if got := list(acme, claimcheck.DeadLetterQuery{Namespace: "a1"}); !slices.Equal(got, slices.Sorted(slices.Values(ids["a1"]))) {
		t.Errorf("acme admin lists a1: %v, want %v", got, ids["a1"])
	}
	// A namespace-limited admin: its namespace, without asking and when
	// asking; another namespace of its tenant is forbidden.
	if got := list(acmeA2, claimcheck.DeadLetterQuery{}); !slices.Equal(got, ids["a2"]) {
		t.Errorf("a2 admin lists %v, want %v", got, ids["a2"])
	}
	if _, err := acmeA2.DeadLetters(ctx, claimcheck.DeadLetterQuery{Namespace: "a1"}); !errors.Is(err, claimcheck.ErrPermissionDenied) {
		t.Errorf("a2 admin asking for a1: %v, want permission_denied", err)
	}
	if _, err := producer.DeadLetters(ctx, claimcheck.DeadLetterQuery{}); !errors.Is(err, claimcheck.ErrPermissionDenied) {
		t.Errorf("producer listing dead letters: %v, want permission_denied", err)
	}

	// Paging: two, then the rest.
	page, err := acme.DeadLetters(ctx, claimcheck.DeadLetterQuery{Limit: 2})
	if err != nil || len(page.DeadLetters) != 2 || page.Next == "" {
		t.Fatalf("first page of 2 = %+v, %v; want 2 and a next", page, err)
	}
	rest, err := acme.DeadLetters(ctx, claimcheck.DeadLetterQuery{Limit: 2, After: page.Next})
	if err != nil || len(rest.DeadLetters) != 1 || rest.Next != "" {
		t.Fatalf("second page = %+v, %v; want the last one and no next", rest, err)
	}
	if got := blobIDs(append(page.DeadLetters, rest.DeadLetters...)); !slices.Equal(got, acmeIDs) {
		t.Errorf("pages = %v, want %v", got, acmeIDs)
	}

	// One dead letter: another tenant's, or one outside a limited key's
	// namespace, is not_found, like an unknown id.
	b1 := ids["b1"][0]
	for name, c := range map[string]*client.Client{"acme admin": acme, "a2 admin": acmeA2} {
		if _, err := c.DeadLetter(ctx, b1); !errors.Is(err, claimcheck.ErrNotFound) {
			t.Errorf("%s reads beta's dead letter: %v, want not_found", name, err)
		}
		if _, err := c.RetryDeadLetter(ctx, b1); !errors.Is(err, claimcheck.ErrNotFound) {
			t.Errorf("%s retries beta's dead letter: %v, want not_found", name, err)
		}
	}
	if _, err := acmeA2.RetryDeadLetter(ctx, ids["a1"][0]); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("a2 admin retries a1's dead letter: %v, want not_found", err)
	}
	if _, err := producer.RetryDeadLetter(ctx, ids["a1"][0]); !errors.Is(err, claimcheck.ErrPermissionDenied) {
		t.Errorf("producer retries a dead letter: %v, want permission_denied", err)
	}
	_, unknown := acme.RetryDeadLetter(ctx, "b_AAAAAAAAAAAAAAAAAAAAAA")
	if !errors.Is(unknown, claimcheck.ErrNotFound) {
		t.Errorf("retry of an unknown id: %v, want not_found", unknown)
	}
	// The answer about another tenant's id says no more than about an
	// unknown one.
	if _, foreign := acme.RetryDeadLetter(ctx, b1); strings.ReplaceAll(foreign.Error(), b1, "ID") != strings.ReplaceAll(unknown.Error(), "b_AAAAAAAAAAAAAAAAAAAAAA", "ID") {
		t.Errorf("another tenant's dead letter: %q; an unknown one: %q; want the same answer", foreign, unknown)
	}
	d, err := beta.DeadLetter(ctx, b1)
	if err != nil || d.Namespace != "b1" || d.Attempts != 1 || !strings.Contains(d.LastError, "access denied") || d.ParkedAt.IsZero() {
		t.Fatalf("beta reads its dead letter: %+v, %v", d, err)
	}
	if back, err := beta.RetryDeadLetter(ctx, b1); err != nil || back.BlobID != b1 {
		t.Fatalf("beta retries its dead letter: %+v, %v", back, err)
	}
	// The audit trail names the key that retried it.
	events, err := b.store.NamespaceEvents(ctx, "b1", claimcheck.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events, func(e claimcheck.Event) bool {
		return e.Kind == "dead_letter_retry" && e.BlobID == b1 && e.Actor != "" && strings.HasPrefix(betaToken, auth.TokenPrefix+e.Actor+"_")
	}) {
		t.Errorf("no dead_letter_retry event by beta's key in %+v", events)
	}
	if _, err := beta.RetryDeadLetter(ctx, b1); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("second retry: %v, want not_found (no longer parked)", err)
	}

	// Retry all: a limited admin takes back its namespace's only; the
	// tenant's admin the rest; beta's (retried above) stays beta's.
	got, err := acmeA2.RetryDeadLetters(ctx, claimcheck.DeadLetterQuery{})
	if err != nil || !slices.Equal(blobIDs(got.DeadLetters), ids["a2"]) || got.Next != "" {
		t.Fatalf("a2 admin retries all: %+v, %v; want %v", got, err, ids["a2"])
	}
	if _, err := producer.RetryDeadLetters(ctx, claimcheck.DeadLetterQuery{}); !errors.Is(err, claimcheck.ErrPermissionDenied) {
		t.Errorf("producer retries all: %v, want permission_denied", err)
	}
	got, err = acme.RetryDeadLetters(ctx, claimcheck.DeadLetterQuery{})
	if err != nil || !slices.Equal(blobIDs(got.DeadLetters), slices.Sorted(slices.Values(ids["a1"]))) {
		t.Fatalf("acme admin retries all: %+v, %v; want %v", got, err, ids["a1"])
	}
	if left, err := b.store.DeadLetters(ctx, claimcheck.DeadLetterQuery{}); err != nil || len(left.DeadLetters) != 0 {
		t.Errorf("dead letters left = %+v, %v; want none", left, err)
	}
}

// TestDeadLettersHTTPBadRequests: bad parameters are 400 naming the
// parameter; a malformed id is 400, a well-formed unknown one 404.
func TestDeadLettersHTTPBadRequests(t *testing.T) {
	b, _ := setupDeadLetters(t, "a1")
	admin := b.key(t, "acme", auth.RoleAdmin, "")
	for _, tc := range []struct {
		method, path string
		status       int
		code, says   string
	}{
		{"GET", "/v1/dead-letters?limit=0", 400, api.CodeInvalidArgument, "query parameter limit"},
		{"GET", "/v1/dead-letters?limit=501", 400, api.CodeInvalidArgument, "query parameter limit"},
		{"GET", "/v1/dead-letters?after=cc_x", 400, api.CodeInvalidArgument, "query parameter after"},
		{"GET", "/v1/dead-letters?ns=Bad", 400, api.CodeInvalidArgument, "query parameter ns"},
		{"GET", "/v1/dead-letters?tenant=", 200, "", ""},
		{"GET", "/v1/dead-letters?tenant=x%20y", 400, api.CodeInvalidArgument, "query parameter tenant"},
		{"GET", "/v1/dead-letters?namespace=a1", 400, api.CodeInvalidArgument, "query parameter namespace: unknown"},
		{"GET", "/v1/dead-letters?ns=a1&ns=a2", 400, api.CodeInvalidArgument, "given 2 times"},
		{"POST", "/v1/dead-letters/retry?nss=a1", 400, api.CodeInvalidArgument, "query parameter nss: unknown"},
		{"POST", "/v1/dead-letters/retry?limit=x", 400, api.CodeInvalidArgument, "query parameter limit"},
		{"GET", "/v1/dead-letters/b_short", 400, api.CodeInvalidArgument, "dead letter id"},
		{"POST", "/v1/dead-letters/cc_AAAAAAAAAAAAAAAAAAAAAA/retry", 400, api.CodeInvalidArgument, "dead letter id"},
		{"GET", "/v1/dead-letters/b_AAAAAAAAAAAAAAAAAAAAAA", 404, api.CodeNotFound, ""},
		{"POST", "/v1/dead-letters/b_AAAAAAAAAAAAAAAAAAAAAA/retry", 404, api.CodeNotFound, ""},
	} {
		resp, body := b.do(t, admin, tc.method, tc.path, nil)
		if resp.StatusCode != tc.status || codeOf(body) != tc.code || !strings.Contains(string(body), tc.says) {
			t.Errorf("%s %s = %d %s, want %d %s saying %q", tc.method, tc.path, resp.StatusCode, body, tc.status, tc.code, tc.says)
		}
	}
}

// TestDeadLettersHTTPWithoutAuth: with auth off every dead letter is
// listed, and tenant and ns are plain filters.
func TestDeadLettersHTTPWithoutAuth(t *testing.T) {
	b, ids := setupDeadLetters(t, "a1", "a2", "b1")
	srv := httptest.NewServer(checkContract(t, false, server.New(server.Config{Claims: b.store})))
	defer srv.Close()
	get := func(query string) []string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/v1/dead-letters" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page api.DeadLetterPage
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d, %v", query, resp.StatusCode, err)
		}
		return blobIDs(page.DeadLetters)
	}
	if got := get(""); len(got) != 3 {
		t.Errorf("all dead letters = %v, want 3", got)
	}
	if got := get("?tenant=beta"); !slices.Equal(got, ids["b1"]) {
		t.Errorf("tenant beta = %v, want %v", got, ids["b1"])
	}
	if got := get("?tenant=acme&ns=a2"); !slices.Equal(got, ids["a2"]) {
		t.Errorf("tenant acme, ns a2 = %v, want %v", got, ids["a2"])
	}
	if got := get("?tenant=beta&ns=a2"); len(got) != 0 {
		t.Errorf("tenant beta, ns a2 = %v, want none", got)
	}
}
