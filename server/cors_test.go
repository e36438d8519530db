package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// corsBundle is a server whose CORS section allows one exact origin and
// the subdomains of one domain.
type corsBundle struct {
	store *engine.Store
	http  *httptest.Server
}

const (
	allowedOrigin = "http://app.example.test:8081"
	evilOrigin    = "http://evil.example.org"
)

func setupCORS(t *testing.T) *corsBundle {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	store := enginetest.Open(t, engine.Config{Logger: logger})
	limits := server.Limits{CORS: server.CORS{
		AllowedOrigins: server.Origins{allowedOrigin, "https://*.example.com"},
		MaxAge:         claimcheck.Duration(600e9),
	}}
	if err := limits.Validate(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{Claims: store, Logger: logger, Limits: limits}))
	t.Cleanup(srv.Close)
	return &corsBundle{store: store, http: srv}
}

func (b *corsBundle) do(t *testing.T, method, path string, body io.Reader, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, b.http.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// usage is the namespace's usage as the API reports it.
func (b *corsBundle) usage(t *testing.T, ns string) claimcheck.NamespaceUsage {
	t.Helper()
	info, err := b.store.Namespace(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return info.Usage
}

func TestCORSPreflight(t *testing.T) {
	b := setupCORS(t)
	ref, err := b.store.Put(context.Background(), "orders", strings.NewReader("hello"), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, method, want string
	}{
		{"/v1/namespaces/media/uploads", "POST", "POST"},
		{"/v1/uploads/" + ref.ID + "/data?expires=1&sig=x", "PUT", "PUT"},
		{"/v1/uploads/" + ref.ID + "/confirm", "POST", "POST"},
		{"/v1/namespaces/orders/claims", "PUT", "GET, HEAD, PUT"}, // GET lists the claims (ADR 0100)
		{"/v1/claims/" + ref.ID, "DELETE", "GET, HEAD, DELETE"},
		{"/v1/claims/" + ref.ID + "/release", "POST", "POST"},
	} {
		for _, origin := range []string{allowedOrigin, "https://a.b.example.com"} {
			resp, body := b.do(t, http.MethodOptions, tc.path, nil, "Origin", origin,
				"Access-Control-Request-Method", tc.method, "Access-Control-Request-Headers", "content-type,authorization")
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("preflight %s %s from %s: %s %s", tc.method, tc.path, origin, resp.Status, body)
			}
			h := resp.Header
			if h.Get("Access-Control-Allow-Origin") != origin || h.Get("Access-Control-Allow-Methods") != tc.want ||
				h.Get("Access-Control-Max-Age") != "600" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") ||
				!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
				t.Errorf("preflight %s %s from %s: headers %v", tc.method, tc.path, origin, h)
			}
		}
	}
	// Not allowed: the plain JSON error, and no CORS header the browser
	// could accept.
	for _, origin := range []string{evilOrigin, "https://example.com", "http://a.example.com", "https://a.example.com:8443", "http://app.example.test:8082", "null"} {
		resp, body := b.do(t, http.MethodOptions, "/v1/namespaces/media/uploads", nil, "Origin", origin, "Access-Control-Request-Method", "POST")
		if resp.StatusCode != http.StatusForbidden || codeOf(body) != api.CodePermissionDenied || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from %s: %s %v %s", origin, resp.Status, resp.Header, body)
		}
		if !strings.Contains(string(body), "http.cors.allowed_origins") {
			t.Errorf("the refusal should name the setting: %s", body)
		}
	}
	// A path that is no route is no route, preflight or not.
	if resp, body := b.do(t, http.MethodOptions, "/v1/nothing", nil, "Origin", allowedOrigin, "Access-Control-Request-Method", "GET"); resp.StatusCode != http.StatusNotFound || codeOf(body) != api.CodeNoRoute {
		t.Errorf("preflight of an unknown path: %s %s", resp.Status, body)
	}
	// Probes are not for pages.
	if resp, _ := b.do(t, http.MethodGet, "/healthz", nil, "Origin", allowedOrigin); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("/healthz answers CORS headers")
	}
}

func TestCORSExposesHeaders(t *testing.T) {
	b := setupCORS(t)
	resp, body := b.do(t, http.MethodPut, "/v1/namespaces/orders/claims", strings.NewReader("payload"),
		"Origin", allowedOrigin, "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain")
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Access-Control-Allow-Origin") != allowedOrigin {
		t.Fatalf("put from an allowed origin: %s %v %s", resp.Status, resp.Header, body)
	}
	var ref claimcheck.Ref
	if err := json.Unmarshal(body, &ref); err != nil {
		t.Fatal(err)
	}
	resp, _ = b.do(t, http.MethodGet, "/v1/claims/"+ref.ID, nil, "Origin", allowedOrigin, "Sec-Fetch-Site", "cross-site")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("redeem from an allowed origin: %s", resp.Status)
	}
	exposed := resp.Header.Get("Access-Control-Expose-Headers")
	for _, h := range []string{api.HeaderRef, api.HeaderSize, "Location"} {
		if !strings.Contains(exposed, h) {
			t.Errorf("Access-Control-Expose-Headers %q lacks %s", exposed, h)
		}
	}
	if !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Origin") {
		t.Errorf("an answer that depends on Origin must say Vary: Origin: %v", resp.Header)
	}
}

// TestCrossOriginTextPlainInit is the attack: a page of any site posts an
// upload init as text/plain, which a browser sends without asking first.
// It must create nothing and reserve nothing.
func TestCrossOriginTextPlainInit(t *testing.T) {
	b := setupCORS(t)
	sum := sha256.Sum256([]byte("x"))
	init := `{"size":1000000,"sha256":"` + hex.EncodeToString(sum[:]) + `"}`
	for _, tc := range []struct {
		name   string
		header []string
		code   string
	}{
		{"cross-site page", []string{"Origin", evilOrigin, "Sec-Fetch-Site", "cross-site"}, api.CodePermissionDenied},
		{"same-site page on another port", []string{"Origin", "http://app.example.test:9999", "Sec-Fetch-Site", "same-site"}, api.CodePermissionDenied},
		{"older browser, Origin only", []string{"Origin", evilOrigin}, api.CodePermissionDenied},
		// From an allowed origin the browser would have asked first for
		// JSON; text/plain itself is refused, for any client.
		{"allowed page, text/plain", []string{"Origin", allowedOrigin, "Sec-Fetch-Site", "cross-site"}, api.CodeInvalidArgument},
		{"no browser, text/plain", nil, api.CodeInvalidArgument},
	} {
		h := append([]string{"Content-Type", "text/plain;charset=UTF-8"}, tc.header...)
		resp, body := b.do(t, http.MethodPost, "/v1/namespaces/media/uploads", strings.NewReader(init), h...)
		if codeOf(body) != tc.code {
			t.Errorf("%s: %s %s, want %s", tc.name, resp.Status, body, tc.code)
		}
		if tc.code == api.CodePermissionDenied && !strings.Contains(string(body), "http.cors.allowed_origins") {
			t.Errorf("%s: the refusal should name the setting: %s", tc.name, body)
		}
		if tc.code == api.CodeInvalidArgument && !strings.Contains(string(body), "Content-Type") {
			t.Errorf("%s: the refusal should name the header: %s", tc.name, body)
		}
		if u := b.usage(t, "media"); u != (claimcheck.NamespaceUsage{}) {
			t.Fatalf("%s: the refused init left usage %+v", tc.name, u)
		}
	}
	// The same init as JSON from the allowed origin works.
	resp, body := b.do(t, http.MethodPost, "/v1/namespaces/media/uploads", strings.NewReader(init),
		"Content-Type", "application/json", "Origin", allowedOrigin, "Sec-Fetch-Site", "cross-site")
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Access-Control-Allow-Origin") != allowedOrigin {
		t.Fatalf("init from an allowed origin: %s %s", resp.Status, body)
	}
	if u := b.usage(t, "media"); u.PendingClaims != 1 || u.ReservedBytes != 1000000 {
		t.Fatalf("usage after one init: %+v", u)
	}
}

// TestCrossOriginStateChanges: release, delete, put, the upload PUT and a
// redeem (a read counts) from a page of a site not allowed change nothing;
// reads that change nothing (meta) go through, their answers kept from
// the page by CORS.
func TestCrossOriginStateChanges(t *testing.T) {
	b := setupCORS(t)
	ctx := context.Background()
	ref, err := b.store.Put(ctx, "orders", strings.NewReader("hello"), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evil := []string{"Origin", evilOrigin, "Sec-Fetch-Site", "cross-site"}
	for _, tc := range []struct {
		method, path, body string
		header             []string
	}{
		{http.MethodPost, "/v1/claims/" + ref.ID + "/release", "", evil},
		{http.MethodPost, "/v1/claims/" + ref.ID + "/release", `{"consumer":"x"}`, append([]string{"Content-Type", "text/plain"}, evil...)},
		{http.MethodDelete, "/v1/claims/" + ref.ID, "", evil},
		{http.MethodPut, "/v1/namespaces/orders/claims", "more", evil},
		{http.MethodPut, "/v1/uploads/" + ref.ID + "/data?expires=1&sig=x", "data", evil},
		{http.MethodGet, "/v1/claims/" + ref.ID, "", evil},
		// A no-cors GET (an <img>) carries no Origin at all.
		{http.MethodGet, "/v1/claims/" + ref.ID, "", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}},
	} {
		resp, body := b.do(t, tc.method, tc.path, strings.NewReader(tc.body), tc.header...)
		if resp.StatusCode != http.StatusForbidden || codeOf(body) != api.CodePermissionDenied {
			t.Errorf("cross-site %s %s: %s %s, want 403 permission_denied", tc.method, tc.path, resp.Status, body)
		}
	}
	info, err := b.store.Stat(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != claimcheck.StateActive || info.Reads != 0 || info.Releases != 0 {
		t.Fatalf("after refused cross-site requests: %+v", info)
	}
	if u := b.usage(t, "orders"); u.ActiveClaims != 1 || u.PendingClaims != 0 {
		t.Fatalf("after refused cross-site requests: usage %+v", u)
	}
	// Meta changes nothing: it is answered (the browser hides it).
	if resp, body := b.do(t, http.MethodGet, "/v1/claims/"+ref.ID+"/meta", nil, evil...); resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("cross-site meta: %s %v %s", resp.Status, resp.Header, body)
	}
	// The address bar (Sec-Fetch-Site: none) and the same origin redeem.
	for _, site := range []string{"none", "same-origin"} {
		if resp, body := b.do(t, http.MethodGet, "/v1/claims/"+ref.ID, nil, "Sec-Fetch-Site", site); resp.StatusCode != http.StatusOK || string(body) != "hello" {
			t.Errorf("redeem with Sec-Fetch-Site %s: %s %s", site, resp.Status, body)
		}
	}
	// A client that is no browser sends neither header: unaffected.
	if resp, body := b.do(t, http.MethodPost, "/v1/claims/"+ref.ID+"/release", nil); resp.StatusCode != http.StatusNoContent {
		t.Errorf("release without browser headers: %s %s", resp.Status, body)
	}
}

func TestCORSConfig(t *testing.T) {
	var h struct {
		CORS server.CORS `yaml:"cors"`
	}
	for _, doc := range []string{
		"cors: {allowed_origins: [\"https://a.example.com\", \"https://*.example.org\"]}",
		"cors: {allowed_origins: \"https://a.example.com, https://*.example.org\"}", // the environment's form
	} {
		if err := yaml.Unmarshal([]byte(doc), &h); err != nil {
			t.Fatal(err)
		}
		if got, err := h.CORS.NormalOrigins(); err != nil || strings.Join(got, " ") != "https://a.example.com https://*.example.org" {
			t.Errorf("%s: %v %v", doc, got, err)
		}
	}
	for _, tc := range []struct{ origin, want string }{
		{"HTTPS://App.Example.COM:443", "https://app.example.com"},
		{"http://127.0.0.1:8081", "http://127.0.0.1:8081"},
		{"http://localhost:80", "http://localhost"},
	} {
		got, err := server.CORS{AllowedOrigins: server.Origins{tc.origin}}.NormalOrigins()
		if err != nil || got[0] != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.origin, got, err, tc.want)
		}
	}
	for _, bad := range []string{"*", "https://app.example.com/", "https://app.example.com/path", "app.example.com", "ftp://x.example.com",
		"https://*.com", "https://a.*.example.com", "https://user@example.com", "https://example.com:99999"} {
		l := server.Limits{CORS: server.CORS{AllowedOrigins: server.Origins{"https://ok.example.com", bad}}}
		err := l.Validate()
		if err == nil || !strings.Contains(err.Error(), "http.cors.allowed_origins[1]") {
			t.Errorf("%q: %v, want an error naming http.cors.allowed_origins[1]", bad, err)
		}
	}
	if err := (server.Limits{CORS: server.CORS{MaxAge: -1}}).Validate(); err == nil || !strings.Contains(err.Error(), "http.cors.max_age") {
		t.Errorf("negative max_age: %v", err)
	}
}

// TestJSONContentType: JSON routes with a body require application/json,
// after authentication like any other input check.
func TestJSONContentType(t *testing.T) {
	b := setupCORS(t)
	ref, err := b.store.Put(context.Background(), "orders", strings.NewReader("hello"), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/claims/" + ref.ID + "/release"
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		var h []string
		if ct != "" {
			h = []string{"Content-Type", ct}
		}
		resp, body := b.do(t, http.MethodPost, path, bytes.NewReader([]byte(`{"consumer":"a"}`)), h...)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Content-Type") {
			t.Errorf("release as %q: %s %s", ct, resp.Status, body)
		}
	}
	if resp, body := b.do(t, http.MethodPost, path, strings.NewReader(`{"consumer":"a"}`), "Content-Type", "application/json; charset=utf-8"); resp.StatusCode != http.StatusNoContent {
		t.Errorf("release as JSON: %s %s", resp.Status, body)
	}
	info, _ := b.store.Stat(context.Background(), ref)
	if info.Releases != 1 {
		t.Errorf("releases = %d, want 1 (only the JSON one)", info.Releases)
	}
}
