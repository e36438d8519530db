package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// initUpload starts a direct upload of data in namespace a2 with token
// and the extra headers; it returns the answer and, on 201, the upload.
func initUpload(t *testing.T, b *authBundle, token string, data []byte, header ...string) (*http.Response, []byte, claimcheck.Upload) {
	t.Helper()
	body := fmt.Sprintf(`{"size":%d,"sha256":%q}`, len(data), strings.TrimPrefix(claimcheck.DigestOf(data), "sha256:"))
	resp, answer := b.do(t, token, http.MethodPost, "/v1/namespaces/a2/uploads", strings.NewReader(body),
		append([]string{"Content-Type", "application/json"}, header...)...)
	var u claimcheck.Upload
	if resp.StatusCode == http.StatusCreated {
		if err := json.Unmarshal(answer, &u); err != nil {
			t.Fatal(err)
		}
	}
	return resp, answer, u
}

// pending is the number of pending claims (uploads not confirmed) in a2.
func (b *authBundle) pending(t *testing.T) int64 {
	t.Helper()
	ns, err := b.meta.Namespace(context.Background(), "a2")
	if err != nil {
		t.Fatal(err)
	}
	return ns.PendingClaims
}

// TestUploadURLPublicURL: with http.public_url set, the upload URL is
// built from it, path prefix included, whatever the forwarded headers
// say, even from a trusted proxy; the signature still holds when the
// proxy strips the prefix; Location carries the prefix too.
func TestUploadURLPublicURL(t *testing.T) {
	b := setupAuth(t, server.Limits{PublicURL: "https://claims.example.com/claimcheck/", TrustedProxies: []string{"127.0.0.0/8"}})
	token := b.key(t, "acme", auth.RoleProducer, "")
	data := []byte("through the public URL")
	resp, answer, u := initUpload(t, b, token, data, "X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "http")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("init: %s %s", resp.Status, answer)
	}
	want := "https://claims.example.com/claimcheck/v1/uploads/" + u.ID + "/data?"
	if !strings.HasPrefix(u.URL, want) {
		t.Fatalf("upload URL %q, want it under %q", u.URL, want)
	}
	// The proxy strips /claimcheck before it forwards.
	if resp, msg := b.do(t, "", http.MethodPut, strings.TrimPrefix(u.URL, "https://claims.example.com/claimcheck"), bytes.NewReader(data)); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT: %s %s", resp.Status, msg)
	}
	resp, answer = b.do(t, token, http.MethodPost, "/v1/uploads/"+u.ID+"/confirm", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Location") != "/claimcheck/v1/claims/"+u.ID {
		t.Fatalf("confirm: %s, Location %q, %s", resp.Status, resp.Header.Get("Location"), answer)
	}
}

// TestUploadURLForwardedHeaders: from a trusted proxy, X-Forwarded-Proto
// and X-Forwarded-Host decide the upload URL's scheme and host, and
// garbage in them is a 400 naming the header that creates nothing; from
// any other peer they are ignored, garbage or not, so a client cannot
// point an upload URL at a host of its choosing. Forwarded (RFC 7239) is
// never read.
func TestUploadURLForwardedHeaders(t *testing.T) {
	trusted := setupAuth(t, server.Limits{TrustedProxies: []string{"127.0.0.1"}})
	untrusted := setupAuth(t, server.Limits{TrustedProxies: []string{"10.0.0.0/8"}})
	self := func(b *authBundle) string { return b.http.URL }
	fixed := func(s string) func(*authBundle) string { return func(*authBundle) string { return s } }
	for _, tc := range []struct {
		name   string
		b      *authBundle
		header []string
		want   func(*authBundle) string // the URL's scheme://host; nil: refused
		naming string                   // for a refusal: the header named
	}{
		{name: "no headers", b: trusted, want: self},
		{name: "proto and host", b: trusted, header: []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "claims.example.com"}, want: fixed("https://claims.example.com")},
		{name: "proto in capitals", b: trusted, header: []string{"X-Forwarded-Proto", "HTTPS", "X-Forwarded-Host", "claims.example.com"}, want: fixed("https://claims.example.com")},
		{name: "host with a port", b: trusted, header: []string{"X-Forwarded-Host", "claims.example.com:8443"}, want: fixed("http://claims.example.com:8443")},
		{name: "IPv6 host", b: trusted, header: []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "[2001:db8::1]:443"}, want: fixed("https://[2001:db8::1]:443")},
		{name: "repeated equal values", b: trusted, header: []string{"X-Forwarded-Host", "claims.example.com, claims.example.com"}, want: fixed("http://claims.example.com")},
		{name: "proto only", b: trusted, header: []string{"X-Forwarded-Proto", "https"}, want: func(b *authBundle) string { return strings.Replace(b.http.URL, "http:", "https:", 1) }},
		{name: "Forwarded is not read", b: trusted, header: []string{"Forwarded", "proto=https;host=evil.example"}, want: self},
		{name: "bad proto", b: trusted, header: []string{"X-Forwarded-Proto", "ftp"}, naming: "X-Forwarded-Proto"},
		{name: "host with a path", b: trusted, header: []string{"X-Forwarded-Host", "evil.example/x"}, naming: "X-Forwarded-Host"},
		{name: "host with user info", b: trusted, header: []string{"X-Forwarded-Host", "a@evil.example"}, naming: "X-Forwarded-Host"},
		{name: "host with a space", b: trusted, header: []string{"X-Forwarded-Host", "a b"}, naming: "X-Forwarded-Host"},
		{name: "port 0", b: trusted, header: []string{"X-Forwarded-Host", "claims.example.com:0"}, naming: "X-Forwarded-Host"},
		{name: "port out of range", b: trusted, header: []string{"X-Forwarded-Host", "claims.example.com:70000"}, naming: "X-Forwarded-Host"},
		{name: "unclosed IPv6", b: trusted, header: []string{"X-Forwarded-Host", "[2001:db8::1"}, naming: "X-Forwarded-Host"},
		{name: "bad IPv4", b: trusted, header: []string{"X-Forwarded-Host", "10.0.0.999"}, naming: "X-Forwarded-Host"},
		{name: "appended hosts", b: trusted, header: []string{"X-Forwarded-Host", "evil.example, claims.example.com"}, naming: "X-Forwarded-Host"},
		{name: "appended protos", b: trusted, header: []string{"X-Forwarded-Proto", "https, http"}, naming: "X-Forwarded-Proto"},
		{name: "untrusted peer", b: untrusted, header: []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "evil.example"}, want: self},
		{name: "untrusted garbage", b: untrusted, header: []string{"X-Forwarded-Proto", "ftp", "X-Forwarded-Host", "a b"}, want: self},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := tc.b.key(t, "acme", auth.RoleProducer, "")
			before := tc.b.pending(t)
			resp, answer, u := initUpload(t, tc.b, token, []byte(tc.name), tc.header...)
			if tc.want == nil {
				e := wantError(t, resp, answer, http.StatusBadRequest, api.CodeInvalidArgument)
				if !strings.Contains(e.Message, tc.naming) {
					t.Errorf("message %q does not name %s", e.Message, tc.naming)
				}
				if after := tc.b.pending(t); after != before {
					t.Errorf("a refused init left %d pending uploads", after-before)
				}
				return
			}
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("init: %s %s", resp.Status, answer)
			}
			if want := tc.want(tc.b) + "/v1/uploads/" + u.ID + "/data?"; !strings.HasPrefix(u.URL, want) {
				t.Errorf("upload URL %q, want it under %q", u.URL, want)
			}
		})
	}
}

// TestPublicURLValidate: Validate refuses public URLs the server could
// not hand out, naming the field and the value.
func TestPublicURLValidate(t *testing.T) {
	for _, ok := range []string{"", "https://claims.example.com", "http://127.0.0.1:8080", "https://example.com/claimcheck/", "https://[2001:db8::1]:8443/a/b"} {
		if err := (server.Limits{PublicURL: ok}).Validate(); err != nil {
			t.Errorf("Validate(public_url %q) = %v", ok, err)
		}
	}
	for _, bad := range []string{
		"claims.example.com", "/claimcheck", "ftp://claims.example.com", "https://", "https:claims",
		"https://claims.example.com?x=1", "https://claims.example.com/#top", "https://user:pw@claims.example.com",
		"https://claims.example.com:0", "https://bad_host.example.com", "https://claims example.com", "%zz",
	} {
		err := (server.Limits{PublicURL: bad}).Validate()
		if err == nil || !strings.Contains(err.Error(), "http.public_url") || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("Validate(public_url %q) = %v, want an error naming the field and the value", bad, err)
		}
	}
}

// TestUploadDataLimits: the signed upload PUT needs no API key even with
// auth on, but it is rate- and stream-limited per client address, with
// the ordinary 429 naming the setting.
func TestUploadDataLimits(t *testing.T) {
	t.Run("rate", func(t *testing.T) {
		// One request per 1000 s: the second PUT cannot get a token in
		// the test's lifetime.
		b := setupAuth(t, server.Limits{RateLimit: 0.001, RateBurst: 1})
		token := b.key(t, "acme", auth.RoleProducer, "")
		data := []byte("rate limited upload")
		_, answer, u := initUpload(t, b, token, data)
		if u.URL == "" {
			t.Fatalf("init: %s", answer)
		}
		path := strings.TrimPrefix(u.URL, b.http.URL)
		if resp, msg := b.do(t, "", http.MethodPut, path, bytes.NewReader(data)); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("first PUT: %s %s", resp.Status, msg)
		}
		resp, msg := b.do(t, "", http.MethodPut, path, bytes.NewReader(data))
		e := wantError(t, resp, msg, http.StatusTooManyRequests, api.CodeRateLimited)
		if !strings.Contains(e.Message, "http.rate_limit") || !strings.Contains(e.Message, "per client address") || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("second PUT: %s, Retry-After %q", e.Message, resp.Header.Get("Retry-After"))
		}
	})
	t.Run("streams", func(t *testing.T) {
		b := setupAuth(t, server.Limits{MaxStreamsPerKey: 1})
		token := b.key(t, "acme", auth.RoleProducer, "")
		data := make([]byte, 64<<10)
		rand.Read(data)
		_, answer, held := initUpload(t, b, token, data)
		_, _, other := initUpload(t, b, token, []byte("other"))
		if held.URL == "" || other.URL == "" {
			t.Fatalf("init: %s", answer)
		}
		entered := make(chan struct{}, 1)
		b.actors.mu.Lock()
		b.actors.entered = entered
		b.actors.mu.Unlock()
		pr, pw := io.Pipe()
		done := make(chan int)
		go func() {
			req, _ := http.NewRequest(http.MethodPut, held.URL, pr)
			req.ContentLength = int64(len(data))
			resp, err := b.http.Client().Do(req)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		// Once the store receives the body, the PUT holds its address's
		// one stream slot.
		<-entered
		b.actors.mu.Lock()
		b.actors.entered = nil
		b.actors.mu.Unlock()
		resp, msg := b.do(t, "", http.MethodPut, strings.TrimPrefix(other.URL, b.http.URL), strings.NewReader("other"))
		e := wantError(t, resp, msg, http.StatusTooManyRequests, api.CodeRateLimited)
		if !strings.Contains(e.Message, "max_streams_per_key") || !strings.Contains(e.Message, "per client address") {
			t.Fatalf("second stream: %s", e.Message)
		}
		// The key's own streams are counted apart: a put with it passes.
		if resp, msg := b.do(t, token, http.MethodPut, "/v1/namespaces/a2/claims", strings.NewReader("x")); resp.StatusCode != http.StatusCreated {
			t.Fatalf("a put with the key while the upload streams: %s %s", resp.Status, msg)
		}
		if _, err := pw.Write(data); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		if got := <-done; got != http.StatusNoContent {
			t.Fatalf("the held PUT: %d", got)
		}
		if resp, msg := b.do(t, "", http.MethodPut, strings.TrimPrefix(other.URL, b.http.URL), strings.NewReader("other")); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("PUT after the slot was freed: %s %s", resp.Status, msg)
		}
	})
}

// TestClientUploadThroughProxy: the Go client, talking to claimcheck
// only through a TLS-terminating reverse proxy (httputil.ReverseProxy
// setting X-Forwarded-*), gets an upload URL on the proxy and completes
// the whole flow: once with the proxy trusted and its headers honoured,
// once with http.public_url under a path prefix the proxy strips.
func TestClientUploadThroughProxy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string
		limits func(proxyURL string) server.Limits
	}{
		{"trusted proxy headers", "", func(string) server.Limits {
			return server.Limits{TrustedProxies: []string{"127.0.0.1"}}
		}},
		{"public_url with a prefix", "/claimcheck", func(proxyURL string) server.Limits {
			return server.Limits{PublicURL: proxyURL + "/claimcheck"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := httptest.NewUnstartedServer(nil)
			proxyURL := "https://" + proxy.Listener.Addr().String()
			b := setupAuth(t, tc.limits(proxyURL))
			backend, err := url.Parse(b.http.URL)
			if err != nil {
				t.Fatal(err)
			}
			proxy.Config.Handler = &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(backend)
				pr.SetXForwarded()
				pr.Out.URL.Path = strings.TrimPrefix(pr.Out.URL.Path, tc.prefix)
				pr.Out.URL.RawPath = ""
			}}
			proxy.StartTLS()
			t.Cleanup(proxy.Close)

			c, err := client.New(proxyURL+tc.prefix, client.WithHTTPClient(proxy.Client()), client.WithAPIKey(b.key(t, "acme", auth.RoleProducer, "")))
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			data := make([]byte, 300<<10)
			rand.Read(data)
			u, err := c.InitUpload(ctx, "a2", claimcheck.UploadRequest{Size: int64(len(data)), Digest: claimcheck.DigestOf(data)})
			if err != nil {
				t.Fatal(err)
			}
			if want := proxyURL + tc.prefix + "/v1/uploads/" + u.ID + "/data?"; !strings.HasPrefix(u.URL, want) {
				t.Fatalf("upload URL %q, want it on the proxy, under %q", u.URL, want)
			}
			if err := c.SendUpload(ctx, u, bytes.NewReader(data)); err != nil {
				t.Fatalf("SendUpload through the proxy: %v", err)
			}
			ref, err := c.ConfirmUpload(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			p, err := b.store.Redeem(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("redeemed %d bytes, %v", len(got), err)
			}
		})
	}
}

// FuzzForwardedHeaders sends upload inits with arbitrary X-Forwarded-Proto
// and X-Forwarded-Host from a trusted proxy. Whatever they hold, the
// answer is either 201 with an upload URL that has an http(s) scheme, no
// user info, and exactly the upload's data path and token query (a
// header can change the host, never inject a path or credentials), or
// 400 invalid_argument naming the header.
func FuzzForwardedHeaders(f *testing.F) {
	for _, s := range [][2]string{
		{"https", "claims.example.com"}, {"HTTP", "claims.example.com:8443"}, {"", "[2001:db8::1]:443"},
		{"ftp", ""}, {"https, http", "a.example, b.example"}, {"https", "evil.example/x?y#z"},
		{"https", "a@b"}, {"", "10.0.0.999"}, {"", "[::1%25eth0]"}, {"", "x:"}, {"", "-a.example"},
	} {
		f.Add(s[0], s[1])
	}
	b := setupAuth(f, server.Limits{TrustedProxies: []string{"127.0.0.0/8", "::1"}})
	token := b.key(f, "acme", auth.RoleProducer, "")
	body := fmt.Sprintf(`{"size":1,"sha256":%q}`, strings.TrimPrefix(claimcheck.DigestOf([]byte("x")), "sha256:"))
	f.Fuzz(func(t *testing.T, proto, host string) {
		req, err := http.NewRequest(http.MethodPost, b.http.URL+"/v1/namespaces/a2/uploads", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-Proto", proto)
		req.Header.Set("X-Forwarded-Host", host)
		resp, err := b.http.Client().Do(req)
		if err != nil {
			t.Skip("not a sendable header value:", err)
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusCreated {
			e := wantError(t, resp, answer, http.StatusBadRequest, api.CodeInvalidArgument)
			if !strings.Contains(e.Message, "X-Forwarded-Proto") && !strings.Contains(e.Message, "X-Forwarded-Host") {
				t.Fatalf("400 not naming a forwarded header: %s", e.Message)
			}
			return
		}
		var up claimcheck.Upload
		if err := json.Unmarshal(answer, &up); err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(up.URL)
		if err != nil {
			t.Fatalf("upload URL %q: %v", up.URL, err)
		}
		q := u.Query()
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" ||
			u.Path != "/v1/uploads/"+up.ID+"/data" || len(q) != 1 || q.Get("token") == "" {
			t.Fatalf("X-Forwarded-Proto %q, X-Forwarded-Host %q gave the upload URL %q", proto, host, up.URL)
		}
	})
}
