package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// FuzzServerRequests sends arbitrary requests — method, path, query, the
// put's headers, an Authorization header and a body — to a server over a
// real store (SQLite and files), in process. Whatever arrives:
//   - no answer is a 500: every bad input is a client error with a code;
//   - every error answer is the JSON error body with a code;
//   - objects are only ever written under blobs/<valid namespace>/, and
//     nothing outside the data directory's known entries appears.
//
// It covers every request body and header parser of the server end to
// end (the unit fuzz targets in server/api cover them one by one).
func FuzzServerRequests(f *testing.F) {
	digest := claimcheck.DigestOf([]byte("hello"))
	seeds := []struct {
		method        byte
		path          string
		digest, cons  string
		names, labels string
		ctype, auth   string
		body          []byte
	}{
		{0, "/v1/namespaces/orders/claims", digest, "2", "a,b", "k=v", "application/json", "", []byte("hello")},
		{1, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA", "", "", "", "", "", "", nil},
		{2, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA/release", "", "", "", "", "application/json", "", []byte(`{"consumer":"a"}`)},
		{3, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA?ns=orders", "", "", "", "", "", "Bearer x", nil},
		{1, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA/events?after=1&limit=2&since=2026-01-01T00:00:00Z", "", "", "", "", "", "", nil},
		{1, "/v1/namespaces/orders/events?since=1h", "", "", "", "", "", "", nil},
		{0, "/v1/namespaces/..%2fetc/claims", "sha256:zz", "-1", "a,a", "k", "", "", []byte("x")},
		{0, "/v1/namespaces/orders/claims", "", "", "%zz", "a=%0d%0a", "text/plain", "Basic Zm9v", bytes.Repeat([]byte("z"), 70000)},
		{2, "/v1/namespaces/orders/uploads", "", "", "", "", "application/json", "", []byte(`{"size":5,"sha256":"` + digest[7:] + `"}`)},
		{1, "/v1/namespaces/orders", "", "", "", "", "", "", nil},
		{1, "/metrics", "", "", "", "", "", "", nil},
		{1, "/v1/dead-letters?tenant=default&ns=orders&after=b_AAAAAAAAAAAAAAAAAAAAAA&limit=3", "", "", "", "", "", "", nil},
		{2, "/v1/dead-letters/retry?ns=orders&limit=x", "", "", "", "", "", "", nil},
		{2, "/v1/dead-letters/b_AAAAAAAAAAAAAAAAAAAAAA/retry", "", "", "", "", "", "", nil},
		// Strict requests: unknown and repeated parameters, trailing
		// JSON, missing fields, control characters, times out of range,
		// methods a path does not take.
		{1, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA?ns=a&ns=b", "", "", "", "", "", "", nil},
		{0, "/v1/namespaces/orders/claims?consumers=3", "", "", "", "", "", "", []byte("x")},
		{1, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA/meta?ns=%zz", "", "", "", "", "", "", nil},
		{2, "/v1/namespaces/orders/uploads", "", "", "", "", "application/json", "", []byte(`{"size":5,"sha256":"` + digest[7:] + `"}{"size":6}`)},
		{2, "/v1/namespaces/orders/uploads", "", "", "", "", "application/json", "", []byte(`{"sha256":"` + digest[7:] + `"}`)},
		{2, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA/release", "", "", "", "", "application/json", "", []byte("{\"consumer\":\"a\u001b[2J\"}")},
		{1, "/v1/events?since=2263-01-01T00:00:00Z", "", "", "", "", "", "", nil},
		{2, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA", "", "", "", "", "", "", nil},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.digest, s.cons, s.names, s.labels, s.ctype, s.auth, s.body)
	}

	dir := f.TempDir()
	store := enginetest.Open(f, engine.Config{Data: dir})
	h := server.New(server.Config{Claims: store, Ready: store.Ready})
	methods := []string{http.MethodPut, http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodHead, http.MethodPatch}

	f.Fuzz(func(t *testing.T, method byte, path, digest, consumers, names, labels, ctype, auth string, body []byte) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(methods[int(method)%len(methods)], "http://127.0.0.1"+path, bytes.NewReader(body))
		if err != nil {
			return // not a request a client could send
		}
		for name, v := range map[string]string{
			api.HeaderDigest: digest, api.HeaderConsumers: consumers, api.HeaderConsumerNames: names,
			api.HeaderLabels: labels, "Content-Type": ctype, "Authorization": auth,
		} {
			if v != "" {
				req.Header.Set(name, v)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s: %d %s", req.Method, path, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 && req.Method != http.MethodHead {
			var e api.Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" {
				t.Fatalf("%s %s: %d answered %q, not a JSON error", req.Method, path, rec.Code, rec.Body.String())
			}
		}
		if rec.Code == http.StatusCreated {
			checkDataDir(t, dir)
		}
	})
}

// checkDataDir: the data directory holds the database files and the blob
// directory; the blob directory holds one directory per valid namespace.
func checkDataDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "blobs" && !strings.HasPrefix(e.Name(), "claimcheck.db") {
			t.Fatalf("unexpected entry %q in the data directory", e.Name())
		}
	}
	nss, err := os.ReadDir(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range nss {
		if blob.IsOwnerMarker(e.Name()) {
			continue // the store's owner marker (internal/bucketsetup)
		}
		if !e.IsDir() || claimcheck.ValidateNamespace(e.Name()) != nil {
			t.Fatalf("object outside a namespace prefix: blobs/%s", e.Name())
		}
	}
}
