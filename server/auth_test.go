package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// authBundle is a server with auth on in front of the real store: two
// tenants, acme (namespaces a1 and a2) and beta (namespace b1).
type authBundle struct {
	store  *engine.Store
	meta   meta.Store
	auth   *auth.Service
	http   *httptest.Server
	actors *actorLog
}

// actorLog records the actor of every put, to check that the server
// passes the key id on for the audit trail.
type actorLog struct {
	*engine.Store
	mu      sync.Mutex
	actors  []string
	entered chan struct{} // when set, every Put and ReceiveUpload sends on it once it began
}

// hook is the entered channel, if a test set one.
func (a *actorLog) hook() chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.entered
}

func (a *actorLog) ReceiveUpload(ctx context.Context, id, token string, contentLength int64, body io.Reader) error {
	if entered := a.hook(); entered != nil {
		entered <- struct{}{}
	}
	return a.Store.ReceiveUpload(ctx, id, token, contentLength, body)
}

// PutWithPolicy is the put the server makes.
func (a *actorLog) PutWithPolicy(ctx context.Context, ns string, body io.Reader, opts claimcheck.PutOptions) (claimcheck.Ref, claimcheck.Policy, error) {
	a.mu.Lock()
	a.actors = append(a.actors, claimcheck.ActorFrom(ctx))
	entered := a.entered
	a.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	return a.Store.PutWithPolicy(ctx, ns, body, opts)
}

func setupAuth(t testing.TB, limits server.Limits) *authBundle {
	t.Helper()
	return setupAuthWith(t, limits, nil)
}

// setupAuthWith is setupAuth with the store's config changed by edit
// first (a blob store that fails, a fake clock).
func setupAuthWith(t testing.TB, limits server.Limits, edit func(*engine.Config)) *authBundle {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b := &authBundle{meta: m, auth: auth.New(m, nil)}
	cfg := engine.Config{
		Data: dir, MetaStore: m, Logger: logger,
		MasterKey: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{4}, 32)), // for the key rotation route
		Tenants:   map[string]claimcheck.TenantPolicy{"acme": {}, "beta": {}},
		Namespaces: map[string]claimcheck.Policy{
			"a1": {Tenant: "acme", MaxSize: 1 << 20, Threshold: 1},
			"a2": {Tenant: "acme"},
			"b1": {Tenant: "beta"},
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	b.store = enginetest.Open(t, cfg)
	b.actors = &actorLog{Store: b.store}
	b.http = httptest.NewServer(checkContract(t, true, server.New(server.Config{
		Claims: b.actors, Logger: logger, Auth: b.auth, ClaimNamespace: b.store.ClaimNamespace, Limits: limits,
	})))
	t.Cleanup(b.http.Close)
	return b
}

func (b *authBundle) key(t testing.TB, tenant string, role auth.Role, ns string) string {
	t.Helper()
	_, token, err := b.auth.Create(context.Background(), auth.CreateParams{Tenant: tenant, Role: role, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

func (b *authBundle) do(t *testing.T, token, method, path string, body io.Reader, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, b.http.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// claim puts a fresh claim into ns directly through the store.
func (b *authBundle) claim(t testing.TB, ns string) claimcheck.Ref {
	t.Helper()
	ref, err := b.store.Put(context.Background(), ns, strings.NewReader("payload of "+ns), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func codeOf(body []byte) string {
	var e api.Error
	if err := json.Unmarshal(body, &e); err != nil {
		return "" // not an error body: no code
	}
	return e.Code
}

// TestIsolationMatrix checks every cell of tenants × roles (tenant-wide
// and namespace-limited keys) × operations against the running server:
// a role that may not do an operation is 403 permission_denied; a claim
// outside the key's tenant or namespace is 404 not_found whatever the
// role, exactly as an unknown id; another tenant's namespace is 404; a
// namespace of the key's own tenant outside its limit is 403.
func TestIsolationMatrix(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	type keySpec struct {
		tenant string
		role   auth.Role
		ns     string
	}
	var keys []keySpec
	for _, tenant := range []string{"acme", "beta"} {
		for _, role := range []auth.Role{auth.RoleProducer, auth.RoleConsumer, auth.RoleAdmin} {
			keys = append(keys, keySpec{tenant, role, ""})
		}
	}
	for _, role := range []auth.Role{auth.RoleProducer, auth.RoleConsumer, auth.RoleAdmin} {
		keys = append(keys, keySpec{"acme", role, "a1"})
	}
	tenantOf := map[string]string{"a1": "acme", "a2": "acme", "b1": "beta"}
	claimOps := []struct {
		op     auth.Op
		method string
		suffix string
		ok     int
	}{
		{auth.OpRedeem, http.MethodGet, "", http.StatusOK},
		{auth.OpStat, http.MethodGet, "/meta", http.StatusOK},
		{auth.OpRelease, http.MethodPost, "/release", http.StatusNoContent},
		{auth.OpDelete, http.MethodDelete, "", http.StatusNoContent},
	}
	cells := 0
	for _, k := range keys {
		token := b.key(t, k.tenant, k.role, k.ns)
		name := fmt.Sprintf("%s/%s/ns=%q", k.tenant, k.role, k.ns)
		for _, ns := range []string{"a1", "a2", "b1"} {
			covers := tenantOf[ns] == k.tenant && (k.ns == "" || k.ns == ns)
			for _, op := range claimOps {
				ref := b.claim(t, ns)
				wantStatus, wantCode := op.ok, ""
				switch {
				case !k.role.Allows(op.op):
					wantStatus, wantCode = http.StatusForbidden, api.CodePermissionDenied
				case !covers:
					wantStatus, wantCode = http.StatusNotFound, api.CodeNotFound
				}
				resp, body := b.do(t, token, op.method, "/v1/claims/"+ref.ID+op.suffix, nil)
				if resp.StatusCode != wantStatus || (wantCode != "" && codeOf(body) != wantCode) {
					t.Errorf("%s %s claim in %s: %s %s, want %d %s", name, op.op, ns, resp.Status, body, wantStatus, wantCode)
				}
				// The answer for a foreign claim is the answer for an id
				// that never existed.
				if wantCode == api.CodeNotFound {
					other := "cc_AAAAAAAAAAAAAAAAAAAAAA"
					resp2, body2 := b.do(t, token, op.method, "/v1/claims/"+other+op.suffix, nil)
					if resp2.StatusCode != resp.StatusCode || strings.ReplaceAll(string(body), ref.ID, other) != string(body2) {
						t.Errorf("%s %s: unknown id answers %s %s, foreign claim %s %s", name, op.op, resp2.Status, body2, resp.Status, body)
					}
				}
				// The claim is untouched by a refused request.
				if wantCode != "" {
					if info, err := b.store.Stat(context.Background(), ref); err != nil || info.Reads != 0 || info.Releases != 0 {
						t.Errorf("%s %s claim in %s: a refused request changed the claim: %+v %v", name, op.op, ns, info, err)
					}
				}
				cells++
			}
			// Namespace routes.
			for _, op := range []struct {
				op     auth.Op
				method string
				path   string
				body   string
				ok     int
			}{
				{auth.OpPut, http.MethodPut, "/v1/namespaces/" + ns + "/claims", "x", http.StatusCreated},
				{auth.OpNamespace, http.MethodGet, "/v1/namespaces/" + ns, "", http.StatusOK},
				{auth.OpAdmin, http.MethodPost, "/v1/namespaces/" + ns + "/key/rewrap?dry_run=true", "", http.StatusOK},
			} {
				wantStatus, wantCode := op.ok, ""
				switch {
				case !k.role.Allows(op.op):
					wantStatus, wantCode = http.StatusForbidden, api.CodePermissionDenied
				case tenantOf[ns] != k.tenant:
					wantStatus, wantCode = http.StatusNotFound, api.CodeNotFound
				case !covers:
					wantStatus, wantCode = http.StatusForbidden, api.CodePermissionDenied
				}
				resp, body := b.do(t, token, op.method, op.path, strings.NewReader(op.body))
				if resp.StatusCode != wantStatus || (wantCode != "" && codeOf(body) != wantCode) {
					t.Errorf("%s %s in %s: %s %s, want %d %s", name, op.op, ns, resp.Status, body, wantStatus, wantCode)
				}
				cells++
			}
		}
		// Key administration: tenant-wide admins only, in their tenant.
		wantStatus := http.StatusForbidden
		if k.role == auth.RoleAdmin && k.ns == "" {
			wantStatus = http.StatusOK
		}
		resp, body := b.do(t, token, http.MethodGet, "/v1/keys", nil)
		if resp.StatusCode != wantStatus {
			t.Errorf("%s list keys: %s %s, want %d", name, resp.Status, body, wantStatus)
		}
		if resp.StatusCode == http.StatusOK {
			var list api.KeyList
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			for _, ki := range list.Keys {
				if ki.Tenant != k.tenant {
					t.Errorf("%s list keys shows key %s of tenant %s", name, ki.ID, ki.Tenant)
				}
				if strings.Contains(string(body), "token") {
					t.Errorf("a key listing must not hold tokens: %s", body)
				}
			}
		}
		resp, body = b.do(t, token, http.MethodPost, "/v1/keys", strings.NewReader(`{"role":"consumer"}`), "Content-Type", "application/json")
		if want := map[int]int{http.StatusOK: http.StatusCreated}[wantStatus]; want == 0 && resp.StatusCode != http.StatusForbidden || want != 0 && resp.StatusCode != want {
			t.Errorf("%s create key: %s %s", name, resp.Status, body)
		}
		cells += 2
		// Namespace listing: exactly the namespaces the key covers.
		resp, body = b.do(t, token, http.MethodGet, "/v1/namespaces", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s list namespaces: %s %s", name, resp.Status, body)
		}
		var nl api.NamespaceList
		if err := json.Unmarshal(body, &nl); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range nl.Namespaces {
			got = append(got, n.Name)
		}
		var want []string
		for _, ns := range []string{"a1", "a2", "b1"} {
			if tenantOf[ns] == k.tenant && (k.ns == "" || k.ns == ns) {
				want = append(want, ns)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s list namespaces = %v, want %v", name, got, want)
		}
		cells++
	}
	t.Logf("%d cells checked", cells)

	// Revoking another tenant's key is not_found.
	betaKey, _, err := b.auth.Create(context.Background(), auth.CreateParams{Tenant: "beta", Role: auth.RoleConsumer})
	if err != nil {
		t.Fatal(err)
	}
	acmeAdmin := b.key(t, "acme", auth.RoleAdmin, "")
	resp, body := b.do(t, acmeAdmin, http.MethodDelete, "/v1/keys/"+betaKey.ID, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("revoke another tenant's key: %s %s, want 404", resp.Status, body)
	}
}

// TestUnauthenticated: every /v1 route needs a key; health probes do not.
func TestUnauthenticated(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	ref := b.claim(t, "a1")
	for _, tc := range []struct{ method, path, token string }{
		{http.MethodPut, "/v1/namespaces/a1/claims", ""},
		{http.MethodGet, "/v1/namespaces/a1", ""},
		{http.MethodGet, "/v1/claims/" + ref.ID, ""},
		{http.MethodGet, "/v1/claims/" + ref.ID + "/meta", ""},
		{http.MethodPost, "/v1/claims/" + ref.ID + "/release", ""},
		{http.MethodDelete, "/v1/claims/" + ref.ID, ""},
		{http.MethodGet, "/v1/keys", ""},
		{http.MethodGet, "/v1/claims/" + ref.ID, "cck_notavalidtoken"},
		{http.MethodGet, "/v1/claims/" + ref.ID, "cck_aaaaaaaaaaaaaaaa_" + strings.Repeat("A", 43)},
	} {
		resp, body := b.do(t, tc.token, tc.method, tc.path, strings.NewReader("x"))
		if resp.StatusCode != http.StatusUnauthorized || codeOf(body) != api.CodeUnauthenticated {
			t.Errorf("%s %s with %q: %s %s, want 401 unauthenticated", tc.method, tc.path, tc.token, resp.Status, body)
		}
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: 401 without WWW-Authenticate", tc.method, tc.path)
		}
	}
	if resp, _ := b.do(t, "", http.MethodGet, "/healthz", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz needs no key: %s", resp.Status)
	}
	if info, err := b.store.Stat(context.Background(), ref); err != nil || info.State != claimcheck.StateActive || info.Reads != 0 {
		t.Fatalf("unauthenticated requests changed the claim: %+v %v", info, err)
	}
	// The failures are in the events log, without secrets.
	evs, err := b.meta.Events(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == auth.EventAuthFailed {
			n++
			if strings.Contains(e.Detail, strings.Repeat("A", 43)) {
				t.Errorf("auth_failed event holds the secret: %q", e.Detail)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d auth_failed events, want 2 (the requests that sent a token; requests without one are not failures of a key)", n)
	}
}

// TestRevokedKeyFailsAtOnce: the request right after a revoke, on the
// same kept-alive connection, is refused.
func TestRevokedKeyFailsAtOnce(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	admin := b.key(t, "acme", auth.RoleAdmin, "")
	resp, body := b.do(t, admin, http.MethodPost, "/v1/keys", strings.NewReader(`{"role":"producer","namespace":"a1","name":"uploader"}`), "Content-Type", "application/json")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create key: %s %s", resp.Status, body)
	}
	var created api.CreatedKey
	if err := json.Unmarshal(body, &created); err != nil || !strings.HasPrefix(created.Token, auth.TokenPrefix) {
		t.Fatalf("created key %s: %v", body, err)
	}
	if created.Tenant != "acme" || created.Role != "producer" || created.Namespace != "a1" {
		t.Fatalf("created key %+v: want acme producer of a1", created.KeyInfo)
	}
	// A key limited to another tenant's namespace cannot be made.
	if resp, body := b.do(t, admin, http.MethodPost, "/v1/keys", strings.NewReader(`{"role":"admin","namespace":"b1"}`), "Content-Type", "application/json"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("create a key for beta's namespace: %s %s, want 404", resp.Status, body)
	}
	put := func() int {
		resp, _ := b.do(t, created.Token, http.MethodPut, "/v1/namespaces/a1/claims", strings.NewReader("x"))
		return resp.StatusCode
	}
	if got := put(); got != http.StatusCreated {
		t.Fatalf("put with the new key: %d", got)
	}
	resp, body = b.do(t, admin, http.MethodDelete, "/v1/keys/"+created.ID, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %s %s", resp.Status, body)
	}
	if got := put(); got != http.StatusUnauthorized {
		t.Fatalf("put right after the revoke: %d, want 401", got)
	}
	// The actor of the put was the key.
	b.actors.mu.Lock()
	defer b.actors.mu.Unlock()
	if len(b.actors.actors) != 1 || b.actors.actors[0] != created.ID {
		t.Fatalf("actors of puts = %v, want [%s]", b.actors.actors, created.ID)
	}
}

// TestBodyLimit: a put over the namespace's max_size is too_large, named
// with the limit, both when Content-Length says so up front (refused
// before the body is read) and when a chunked body runs over.
func TestBodyLimit(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	token := b.key(t, "acme", auth.RoleProducer, "")
	big := bytes.Repeat([]byte("x"), 1<<20+1)

	// Content-Length: refused before reading. The body reader counts.
	counted := &countingReader{r: bytes.NewReader(big)}
	req, _ := http.NewRequest(http.MethodPut, b.http.URL+"/v1/namespaces/a1/claims", counted)
	req.ContentLength = int64(len(big))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := b.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || codeOf(body) != api.CodeTooLarge || !strings.Contains(string(body), "max_size") {
		t.Fatalf("put with Content-Length over max_size: %s %s, want 413 too_large naming max_size", resp.Status, body)
	}

	// Chunked: stopped mid-stream.
	resp, body = b.do(t, token, http.MethodPut, "/v1/namespaces/a1/claims", io.MultiReader(bytes.NewReader(big)))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || codeOf(body) != api.CodeTooLarge || !strings.Contains(string(body), "max_size") {
		t.Fatalf("chunked put over max_size: %s %s, want 413 too_large naming max_size", resp.Status, body)
	}
	// A put at the limit is fine.
	resp, body = b.do(t, token, http.MethodPut, "/v1/namespaces/a1/claims", bytes.NewReader(big[:1<<20]))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("put of exactly max_size: %s %s", resp.Status, body)
	}
	ns, err := b.meta.Namespace(context.Background(), "a1")
	if err != nil || ns.ActiveClaims != 1 || ns.PendingClaims != 0 {
		t.Fatalf("after two refused puts and one good one: %+v %v", ns, err)
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestRateLimit: a key over its rate gets 429 rate_limited with a
// Retry-After, naming the limit; other keys are not affected.
func TestRateLimit(t *testing.T) {
	// One request an hour after a burst of 3: the fourth is refused for
	// about an hour, whatever the machine's speed.
	b := setupAuth(t, server.Limits{RateLimit: 1.0 / 3600, RateBurst: 3})
	k1 := b.key(t, "acme", auth.RoleProducer, "")
	k2 := b.key(t, "acme", auth.RoleProducer, "")
	for i := range 3 {
		if resp, body := b.do(t, k1, http.MethodGet, "/v1/namespaces/a1", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d within the burst: %s %s", i, resp.Status, body)
		}
	}
	resp, body := b.do(t, k1, http.MethodGet, "/v1/namespaces/a1", nil)
	if resp.StatusCode != http.StatusTooManyRequests || codeOf(body) != api.CodeRateLimited || !strings.Contains(string(body), "http.rate_limit") {
		t.Fatalf("request over the rate: %s %s, want 429 rate_limited naming http.rate_limit", resp.Status, body)
	}
	var secs int
	if _, err := fmt.Sscan(resp.Header.Get("Retry-After"), &secs); err != nil || secs < 3000 || secs > 3600 {
		t.Fatalf("Retry-After %q, want about an hour", resp.Header.Get("Retry-After"))
	}
	if resp, body := b.do(t, k2, http.MethodGet, "/v1/namespaces/a1", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("another key is not limited: %s %s", resp.Status, body)
	}
	// The Go client maps the answer to ErrRateLimited with the wait.
	c, err := client.New(b.http.URL, client.WithAPIKey(k1), client.WithHTTPClient(b.http.Client()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Policy(context.Background(), "a1")
	var ce *client.Error
	if !errors.Is(err, claimcheck.ErrRateLimited) || !errors.As(err, &ce) || ce.RetryAfter < 50*time.Minute {
		t.Fatalf("client over the rate: %v (%+v), want ErrRateLimited with a RetryAfter of about an hour", err, ce)
	}
}

// TestStreamLimit: a key with max_streams_per_key payloads in flight gets
// rate_limited for the next one; when one ends, the next goes through.
func TestStreamLimit(t *testing.T) {
	b := setupAuth(t, server.Limits{MaxStreamsPerKey: 1})
	k := b.key(t, "acme", auth.RoleProducer, "")
	// A put whose body is held open occupies the one slot.
	entered := make(chan struct{}, 1)
	b.actors.mu.Lock()
	b.actors.entered = entered
	b.actors.mu.Unlock()
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPut, b.http.URL+"/v1/namespaces/a2/claims", pr)
		req.Header.Set("Authorization", "Bearer "+k)
		resp, err := b.http.Client().Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	// Once the store's Put has begun, the put holds its stream slot.
	<-entered
	b.actors.mu.Lock()
	b.actors.entered = nil
	b.actors.mu.Unlock()
	if _, err := pw.Write([]byte("first part")); err != nil {
		t.Fatal(err)
	}
	resp, body := b.do(t, k, http.MethodPut, "/v1/namespaces/a2/claims", strings.NewReader("x"))
	if resp.StatusCode != http.StatusTooManyRequests || codeOf(body) != api.CodeRateLimited || !strings.Contains(string(body), "max_streams_per_key") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream: %s %s, want 429 rate_limited naming max_streams_per_key", resp.Status, body)
	}
	pw.Close()
	if got := <-done; got != http.StatusCreated {
		t.Fatalf("the held put: %d", got)
	}
	if resp, body := b.do(t, k, http.MethodPut, "/v1/namespaces/a2/claims", strings.NewReader("x")); resp.StatusCode != http.StatusCreated {
		t.Fatalf("after the first stream ended: %s %s", resp.Status, body)
	}
}

// TestClaimNamespaceFromQuery: a redeem, release or delete that names
// its namespace (?ns=, as the clients send a ref's) is authorised
// against that namespace without looking the claim up, and a claim that
// is not in it is not_found, with the answer a claim that does not exist
// gets: naming a namespace the key covers reaches no claim outside it.
func TestClaimNamespaceFromQuery(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	token := b.key(t, "acme", auth.RoleAdmin, "a1")
	other, foreign := b.claim(t, "a2"), b.claim(t, "b1")
	unknown := "cc_" + strings.Repeat("A", 22)
	for _, c := range []struct {
		method, suffix string
		ok             int
	}{
		{http.MethodGet, "", http.StatusOK},
		{http.MethodPost, "/release", http.StatusNoContent},
		{http.MethodDelete, "", http.StatusNoContent},
	} {
		var bodies []string
		for _, id := range []string{other.ID, foreign.ID, unknown} {
			resp, body := b.do(t, token, c.method, "/v1/claims/"+id+c.suffix+"?ns=a1", strings.NewReader(`{}`), "Content-Type", "application/json")
			if resp.StatusCode != http.StatusNotFound || codeOf(body) != "not_found" {
				t.Errorf("%s %s of a claim outside a1, named as in a1: %d %s, want 404 not_found", c.method, c.suffix, resp.StatusCode, body)
			}
			bodies = append(bodies, strings.ReplaceAll(string(body), id, "ID"))
		}
		if bodies[0] != bodies[2] || bodies[1] != bodies[2] {
			t.Errorf("%s %s: answers differ between claims of another namespace, another tenant and none: %q", c.method, c.suffix, bodies)
		}
		mine := b.claim(t, "a1")
		resp, body := b.do(t, token, c.method, "/v1/claims/"+mine.ID+c.suffix+"?ns=a1", strings.NewReader(`{}`), "Content-Type", "application/json")
		if resp.StatusCode != c.ok {
			t.Errorf("%s %s of a claim in a1: %d %s, want %d", c.method, c.suffix, resp.StatusCode, body, c.ok)
		}
	}
}
