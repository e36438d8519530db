package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/server/console"
)

func get(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestAssetsAreEmbedded: the binary carries the built console (npm run
// build writes dist/, which is committed): the page, its one script with
// uPlot bundled in, its one stylesheet.
func TestAssetsAreEmbedded(t *testing.T) {
	for name, want := range map[string]string{
		"index.html": `<script type="module" src="app.js"></script>`,
		"app.js":     "uplot", // uPlot's class names: the chart library is in the bundle
		"app.css":    ".uplot",
	} {
		b, err := fs.ReadFile(console.Assets(), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not contain %q", name, want)
		}
	}
}

// TestNothingInline: the page holds no inline script, style element or
// style attribute, and loads nothing from another origin, so the strict
// Content-Security-Policy costs it nothing.
func TestNothingInline(t *testing.T) {
	b, err := fs.ReadFile(console.Assets(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, re := range []string{`<script[^>]*>\s*[^<\s]`, `<style`, `\sstyle=`, `\son[a-z]+=`, `(?:src|href)="(?:https?:)?//`} {
		if regexp.MustCompile(re).MatchString(page) {
			t.Errorf("index.html matches %s", re)
		}
	}
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(m, `src="app.js"`) {
			t.Errorf("index.html has %s: only the bundled script may run", m)
		}
	}
}

// TestHeaders: every answer under /console/ carries the strict CSP
// (only this origin, nothing inline, no framing) and nosniff, the files
// their own types.
func TestHeaders(t *testing.T) {
	h := console.Handler()
	for path, ctype := range map[string]string{
		"/console/":           "text/html; charset=utf-8",
		"/console/index.html": "text/html; charset=utf-8",
		"/console/app.js":     "text/javascript; charset=utf-8",
		"/console/app.css":    "text/css; charset=utf-8",
	} {
		resp, body := get(t, h, http.MethodGet, path)
		if resp.StatusCode != http.StatusOK || body == "" {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if got := resp.Header.Get("Content-Type"); got != ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", path, got, ctype)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || strings.Contains(csp, "*") {
			t.Errorf("GET %s: CSP %q allows more than this origin", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
	}
}

// TestOnlyTheFilesAndOnlyReads: a path the build did not write is 404
// (the pages route by the fragment), a write is 405.
func TestOnlyTheFilesAndOnlyReads(t *testing.T) {
	h := console.Handler()
	for _, path := range []string{"/console/nope.js", "/console/a/app.js", "/console/../console/app.js", "/console/.", "/console/%2e%2e/go.mod"} {
		if resp, _ := get(t, h, http.MethodGet, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	if resp, _ := get(t, h, http.MethodPost, "/console/"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /console/: %d, want 405", resp.StatusCode)
	}
	if resp, body := get(t, h, http.MethodHead, "/console/app.js"); resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD /console/app.js: %d with %d bytes", resp.StatusCode, len(body))
	}
}

// TestMount: the console in front of the API takes /console/ and
// redirects /console there; everything else is the API's.
func TestMount(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := console.Mount(api)
	if resp, _ := get(t, h, http.MethodGet, "/console"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/console/" {
		t.Errorf("GET /console: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := get(t, h, http.MethodGet, "/console/"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /console/: %d", resp.StatusCode)
	}
	for _, path := range []string{"/v1/namespaces", "/healthz", "/consoles", "/"} {
		if resp, _ := get(t, h, http.MethodGet, path); resp.StatusCode != http.StatusTeapot {
			t.Errorf("GET %s: %d, want the API's answer", path, resp.StatusCode)
		}
	}
}
