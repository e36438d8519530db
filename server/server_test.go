package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// bundle is the server in front of the real embedded store (SQLite and
// files in a temporary directory), spoken to with plain HTTP, the way
// curl or a client in another language would.
type bundle struct {
	store *engine.Store
	meta  meta.Store
	reg   *prometheus.Registry
	http  *httptest.Server
	dir   string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b := &bundle{meta: m, reg: prometheus.NewRegistry(), dir: dir}
	b.store = enginetest.Open(t, engine.Config{
		Data: dir, MetaStore: m, Logger: logger, Registerer: b.reg,
		Namespaces: map[string]claimcheck.Policy{"raw": {Compression: claimcheck.CompressionNone}},
	})
	b.http = httptest.NewServer(checkContract(t, false, server.New(server.Config{
		Claims: b.store, Ready: b.store.Ready, Gatherer: b.reg, Registerer: b.reg, Logger: logger,
	})))
	t.Cleanup(b.http.Close)
	return b
}

// do sends a request and returns the response with its body read.
func (b *bundle) do(t *testing.T, method, path string, body io.Reader, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, b.http.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := b.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp, data
}

func (b *bundle) put(t *testing.T, ns string, data []byte, header ...string) claimcheck.Ref {
	t.Helper()
	resp, body := b.do(t, http.MethodPut, "/v1/namespaces/"+ns+"/claims", bytes.NewReader(data), header...)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("put: %s %s", resp.Status, body)
	}
	ref, err := claimcheck.ParseRef(body)
	if err != nil {
		t.Fatalf("put answered %q: %v", body, err)
	}
	if loc := resp.Header.Get("Location"); loc != "/v1/claims/"+ref.ID {
		t.Errorf("Location %q", loc)
	}
	return ref
}

// wantError checks that an answer is the JSON error with status and code.
func wantError(t *testing.T, resp *http.Response, body []byte, status int, code string) api.Error {
	t.Helper()
	var e api.Error
	if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != status || e.Code != code || e.Message == "" {
		t.Fatalf("answer %s %q, want %d with JSON code %q", resp.Status, body, status, code)
	}
	if ct := resp.Header.Get("Content-Type"); ct != api.ContentTypeJSON {
		t.Errorf("error Content-Type %q", ct)
	}
	return e
}

// objects lists the files in the store's blob directory.
func (b *bundle) objects(t *testing.T) []string {
	t.Helper()
	var keys []string
	root := filepath.Join(b.dir, "blobs")
	if err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !blob.IsOwnerMarker(d.Name()) {
			rel, _ := filepath.Rel(root, path)
			keys = append(keys, rel)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestPayloadResponse(t *testing.T) {
	b := setup(t)
	for _, size := range []int{0, 100, 200 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := bytes.Repeat([]byte("x"), size)
			ref := b.put(t, "orders", data, "Content-Type", "text/plain")
			// A client that does not read trailers (curl, wget) gets
			// the length (ADR 0255).
			plain, body := b.do(t, http.MethodGet, "/v1/claims/"+ref.ID+"?ns=orders", nil)
			if plain.StatusCode != http.StatusOK || !bytes.Equal(body, data) || plain.ContentLength != int64(size) || plain.Header.Get("Trailer") != "" {
				t.Fatalf("redeem without TE: trailers: %s, %d bytes, Content-Length %d, Trailer %q; want the payload with its length",
					plain.Status, len(body), plain.ContentLength, plain.Header.Get("Trailer"))
			}
			resp, body := b.do(t, http.MethodGet, "/v1/claims/"+ref.ID+"?ns=orders", nil, "TE", "trailers")
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
				t.Fatalf("redeem: %s, %d bytes", resp.Status, len(body))
			}
			// To a client that reads trailers: streamed with a trailer,
			// never a Content-Length, even for payloads small enough for
			// net/http to add one.
			if resp.ContentLength != -1 || resp.Header.Get("Content-Length") != "" || !slicesContain(resp.TransferEncoding, "chunked") {
				t.Errorf("Content-Length %d, Transfer-Encoding %v; want chunked", resp.ContentLength, resp.TransferEncoding)
			}
			if _, declared := resp.Trailer[api.TrailerError]; !declared {
				t.Errorf("trailer %s not declared: %v", api.TrailerError, resp.Trailer)
			}
			if v := resp.Trailer.Get(api.TrailerError); v != "" {
				t.Errorf("trailer %s = %q on success", api.TrailerError, v)
			}
			got, err := claimcheck.ParseRef([]byte(resp.Header.Get(api.HeaderRef)))
			if err != nil || got != ref {
				t.Errorf("header %s: %v, %v; want %v", api.HeaderRef, got, err, ref)
			}
			if s := resp.Header.Get(api.HeaderSize); s != fmt.Sprint(size) {
				t.Errorf("header %s = %q", api.HeaderSize, s)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/plain" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestCorruptObject checks the raw answers for a corrupted object: 422
// when the failure shows before the status line, otherwise 200 with the
// error in the trailer for a client that sends "TE: trailers", and an
// aborted connection (a body that breaks off) for one that does not.
func TestCorruptObject(t *testing.T) {
	tests := []struct {
		size    int
		trailer bool
	}{{10 << 10, false}, {1 << 20, true}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.size), func(t *testing.T) {
			b := setup(t)
			data := bytes.Repeat([]byte("0123456789abcdef"), tt.size/16)
			ref := b.put(t, "raw", data)
			objs := b.objects(t)
			if len(objs) != 1 {
				t.Fatalf("want one object, have %v", objs)
			}
			path := filepath.Join(b.dir, "blobs", objs[0])
			stored, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			stored[len(stored)-10] ^= 0x20
			if err := os.WriteFile(path, stored, 0o600); err != nil {
				t.Fatal(err)
			}
			if !tt.trailer {
				resp, body := b.do(t, http.MethodGet, "/v1/claims/"+ref.ID, nil)
				wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeChecksumMismatch)
				return
			}
			// Without TE: trailers the stream is aborted: a plain client
			// sees a broken body, never a cleanly ended one.
			plain, err := b.http.Client().Get(b.http.URL + "/v1/claims/" + ref.ID)
			if err != nil {
				t.Fatal(err)
			}
			_, rerr := io.ReadAll(plain.Body)
			plain.Body.Close()
			if plain.StatusCode != http.StatusOK || rerr == nil {
				t.Fatalf("GET without TE: trailers: status %s, body error %v; want 200 and a broken body", plain.Status, rerr)
			}
			// That first redeem marked the blob damaged (ADR 0095): the
			// next one is refused before any byte.
			resp, body := b.do(t, http.MethodGet, "/v1/claims/"+ref.ID, nil, "TE", "trailers")
			wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeChecksumMismatch)
			// A repairing put brings the bytes back; damage them again for
			// the trailer case.
			b.put(t, "raw", data)
			objs = b.objects(t)
			if len(objs) != 1 {
				t.Fatalf("after the repair want one object, have %v", objs)
			}
			path = filepath.Join(b.dir, "blobs", objs[0])
			if stored, err = os.ReadFile(path); err != nil {
				t.Fatal(err)
			}
			stored[len(stored)-10] ^= 0x20
			if err := os.WriteFile(path, stored, 0o600); err != nil {
				t.Fatal(err)
			}
			resp, _ = b.do(t, http.MethodGet, "/v1/claims/"+ref.ID, nil, "TE", "trailers")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s, want 200 and the error in the trailer", resp.Status)
			}
			var e api.Error
			if err := json.Unmarshal([]byte(resp.Trailer.Get(api.TrailerError)), &e); err != nil || e.Code != api.CodeChecksumMismatch {
				t.Fatalf("trailer %q, want a checksum_mismatch error", resp.Trailer.Get(api.TrailerError))
			}
		})
	}
}

func TestErrorsAreJSON(t *testing.T) {
	b := setup(t)
	ref := b.put(t, "orders", []byte("payload"))
	unknown := "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA"
	tests := []struct {
		method, path string
		body         string
		header       []string
		status       int
		code         string
	}{
		{method: "GET", path: unknown, status: 404, code: api.CodeNotFound},
		{method: "GET", path: unknown + "/meta", status: 404, code: api.CodeNotFound},
		{method: "POST", path: unknown + "/release", status: 404, code: api.CodeNotFound},
		{method: "GET", path: "/v1/claims/" + ref.ID + "?ns=other", status: 404, code: api.CodeNotFound},
		{method: "GET", path: "/v1/claims/nonsense", status: 400, code: api.CodeInvalidArgument},
		{method: "DELETE", path: "/v1/claims/cc_short", status: 400, code: api.CodeInvalidArgument},
		{method: "GET", path: "/v1/claims/" + ref.ID + "?ns=Bad/NS", status: 400, code: api.CodeInvalidArgument},
		{method: "PUT", path: "/v1/namespaces/UPPER/claims", body: "x", status: 400, code: api.CodeInvalidArgument},
		{method: "GET", path: "/v1/namespaces/" + strings.Repeat("n", 30), status: 400, code: api.CodeInvalidArgument},
		{method: "POST", path: "/v1/claims/" + ref.ID + "/release", body: "{not json", status: 400, code: api.CodeInvalidArgument},
		{method: "POST", path: "/v1/claims/" + ref.ID + "/release", body: `{"consumer":"a","extra":1}`, status: 400, code: api.CodeInvalidArgument},
		{method: "POST", path: "/v1/claims/" + ref.ID + "/release", body: `{"consumer":"a"}{}`, status: 400, code: api.CodeInvalidArgument},
		{method: "PUT", path: "/v1/namespaces/orders/claims", body: "x", header: []string{api.HeaderDigest, "md5:abc"}, status: 400, code: api.CodeInvalidArgument},
		{method: "PUT", path: "/v1/namespaces/orders/claims", body: "x", header: []string{api.HeaderDigest, claimcheck.DigestOf([]byte("y"))}, status: 422, code: api.CodeChecksumMismatch},
		{method: "PUT", path: "/v1/namespaces/orders/claims", body: "x", header: []string{api.HeaderConsumers, "-2"}, status: 400, code: api.CodeInvalidArgument},
		{method: "PUT", path: "/v1/namespaces/orders/claims", body: "x", header: []string{api.HeaderConsumers, "1", api.HeaderConsumers, "2"}, status: 400, code: api.CodeInvalidArgument},
		{method: "PUT", path: "/v1/namespaces/orders/claims", body: "x", header: []string{api.HeaderLabels, "novalue"}, status: 400, code: api.CodeInvalidArgument},
		{method: "PUT", path: "/v1/namespaces/orders/claims", body: "x", header: []string{api.HeaderConsumerNames, "a,a"}, status: 400, code: api.CodeInvalidArgument},
		{method: "PUT", path: "/v1/namespaces/orders/claims", body: "x", header: []string{api.HeaderConsumers, "3", api.HeaderConsumerNames, "a,b"}, status: 400, code: api.CodeInvalidArgument},
		{method: "GET", path: "/v2/anything", status: 404, code: api.CodeNoRoute},
		{method: "GET", path: "/", status: 404, code: api.CodeNoRoute},
		{method: "PATCH", path: "/v1/claims/" + ref.ID, status: 405, code: api.CodeMethodNotAllowed},
		{method: "POST", path: "/v1/namespaces/orders/claims", status: 405, code: api.CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			resp, data := b.do(t, tt.method, tt.path, body, tt.header...)
			e := wantError(t, resp, data, tt.status, tt.code)
			if tt.status == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
			if tt.code == api.CodeInvalidArgument && strings.HasPrefix(tt.path, "/v1/namespaces/orders") && len(tt.header) > 0 &&
				!strings.Contains(e.Message, "Claimcheck-") && !strings.Contains(e.Message, "consumers") {
				t.Errorf("message %q does not say which header is wrong", e.Message)
			}
		})
	}
	// None of the refused puts stored anything: the one claim is the first.
	if got, err := b.meta.Namespace(context.Background(), "orders"); err != nil || got.ActiveClaims != 1 || got.PendingClaims != 0 {
		t.Errorf("namespace after refused puts: %+v, %v", got, err)
	}
}

// TestHeadDoesNotRead: HEAD on a payload is refused, so it does not count
// as a read.
func TestHeadDoesNotRead(t *testing.T) {
	b := setup(t)
	ref := b.put(t, "orders", []byte("payload"))
	resp, _ := b.do(t, http.MethodHead, "/v1/claims/"+ref.ID, nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("HEAD: %s", resp.Status)
	}
	info, err := b.store.Stat(context.Background(), ref)
	if err != nil || info.Reads != 0 {
		t.Fatalf("after HEAD: %+v, %v; want no read", info, err)
	}
}

func TestPutHeaders(t *testing.T) {
	b := setup(t)
	data := []byte(`{"hello":"world"}`)
	ref := b.put(t, "orders", data,
		"Content-Type", "application/json",
		api.HeaderDigest, claimcheck.DigestOf(data),
		api.HeaderConsumerNames, "audit, mailer%2Ceu",
		api.HeaderLabels, "team=billing, note=a+b%3Dc",
		api.HeaderLabels, "region=eu", // a second line of the same list
	)
	resp, body := b.do(t, http.MethodGet, "/v1/claims/"+ref.ID+"/meta", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("meta: %s %s", resp.Status, body)
	}
	var info claimcheck.ClaimInfo
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"team": "billing", "note": "a b=c", "region": "eu"}
	if info.ContentType != "application/json" || info.Consumers != 2 || fmt.Sprint(info.Labels) != fmt.Sprint(want) || info.Ref != ref {
		t.Fatalf("meta = %+v", info)
	}
	for _, consumer := range []string{"audit", "mailer,eu"} {
		body, _ := json.Marshal(api.ReleaseRequest{Consumer: consumer})
		if resp, data := b.do(t, http.MethodPost, "/v1/claims/"+ref.ID+"/release", bytes.NewReader(body), "Content-Type", "application/json"); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("release %s: %s %s", consumer, resp.Status, data)
		}
	}
	if info, err := b.store.Stat(context.Background(), ref); err != nil || info.Releases != 2 {
		t.Fatalf("after two releases: %+v, %v", info, err)
	}
	if resp, data := b.do(t, http.MethodDelete, "/v1/claims/"+ref.ID, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %s %s", resp.Status, data)
	}
	resp, body = b.do(t, http.MethodGet, "/v1/claims/"+ref.ID, nil)
	if e := wantError(t, resp, body, http.StatusGone, api.CodeGone); e.Reason != string(claimcheck.ReasonDeleted) || e.At.IsZero() {
		t.Errorf("gone answer %+v, want reason deleted and a time", e)
	}
}

func TestNamespace(t *testing.T) {
	b := setup(t)
	resp, body := b.do(t, http.MethodGet, "/v1/namespaces/raw", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s", resp.Status, body)
	}
	var got api.NamespaceInfo
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want, _ := b.store.Policy(context.Background(), "raw")
	if got.Name != "raw" || got.Policy.Compression != claimcheck.CompressionNone || got.Policy.MaxSize != want.MaxSize || got.Policy.TTL.MaxAge != want.TTL.MaxAge {
		t.Fatalf("namespace = %+v, want the policy %+v", got, want)
	}
}

// TestTruncatedBody sends bodies that end early over a raw connection and
// hangs up: the put must fail and leave nothing stored.
func TestTruncatedBody(t *testing.T) {
	payload := bytes.Repeat([]byte("truncated "), 50_000)
	tests := []struct {
		name string
		req  string
	}{
		{"short of Content-Length", fmt.Sprintf("PUT /v1/namespaces/raw/claims HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(payload)*2, payload)},
		{"cut chunk", fmt.Sprintf("PUT /v1/namespaces/raw/claims HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s", len(payload)*2, payload)},
		{"no last chunk", fmt.Sprintf("PUT /v1/namespaces/raw/claims HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(payload), payload)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			conn, err := net.Dial("tcp", b.http.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tt.req); err != nil {
				t.Fatal(err)
			}
			// Half-close: the server reads the end of the stream, but can
			// still answer.
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			e := wantError(t, resp, body, http.StatusBadRequest, api.CodeInvalidArgument)
			if !strings.Contains(e.Message, "body") {
				t.Errorf("message %q does not say the body was at fault", e.Message)
			}
			b.http.Close() // waits for the handler to finish
			n, err := b.meta.Namespace(context.Background(), "raw")
			if err != nil || n.ActiveClaims != 0 || n.PendingClaims != 0 || n.UsedBytes != 0 || n.ReservedBytes != 0 {
				t.Errorf("namespace after a truncated put: %+v, %v; want nothing", n, err)
			}
			if objs := b.objects(t); len(objs) != 0 {
				t.Errorf("objects left: %v", objs)
			}
		})
	}
}

func TestProbesAndMetrics(t *testing.T) {
	b := setup(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp, body := b.do(t, http.MethodGet, path, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s %s", path, resp.Status, body)
		}
	}
	ref := b.put(t, "orders", []byte("payload"))
	b.do(t, http.MethodGet, "/v1/claims/"+ref.ID, nil)
	b.do(t, http.MethodGet, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA", nil)
	b.do(t, http.MethodGet, "/no/such/route", nil)

	resp, body := b.do(t, http.MethodGet, "/metrics", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	for _, want := range []string{
		`claimcheck_http_requests_total{code="201",route="PUT /v1/namespaces/{ns}/claims"} 1`,
		`claimcheck_http_requests_total{code="200",route="GET /v1/claims/{id}"} 1`,
		`claimcheck_http_requests_total{code="404",route="GET /v1/claims/{id}"} 1`,
		`claimcheck_http_requests_total{code="404",route="unmatched"} 1`,
		`claimcheck_http_requests_total{code="200",route="GET /readyz"} 1`,
		`claimcheck_http_request_duration_seconds_count{route="PUT /v1/namespaces/{ns}/claims"} 1`,
		`claimcheck_http_requests_in_flight 1`,                  // the /metrics request itself
		`claimcheck_claims_created_total{namespace="orders"} 1`, // the store's, same registry
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A database that does not answer makes the server unready, not dead.
	b.meta.Close()
	resp, body = b.do(t, http.MethodGet, "/readyz", nil)
	wantError(t, resp, body, http.StatusServiceUnavailable, api.CodeUnavailable)
	if resp, _ := b.do(t, http.MethodGet, "/healthz", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz with the store down: %s", resp.Status)
	}
}

func TestNoMetricsWithoutGatherer(t *testing.T) {
	b := setup(t)
	h := server.New(server.Config{Claims: b.store})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/metrics without a Gatherer: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/readyz without a Ready func: %d", rec.Code)
	}
}

func TestReadyFailure(t *testing.T) {
	b := setup(t)
	h := server.New(server.Config{Claims: b.store, Ready: func(context.Context) error {
		return errors.New("database is still migrating")
	}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	e := wantError(t, rec.Result(), rec.Body.Bytes(), http.StatusServiceUnavailable, api.CodeUnavailable)
	if !strings.Contains(e.Message, "migrating") {
		t.Errorf("message %q does not say why", e.Message)
	}
}

func TestNewNeedsClaims(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New without Claims did not panic")
		}
	}()
	server.New(server.Config{})
}

// TestServerSideFailuresNameNoAddress: a 503 whose cause is a connection
// of the server (here /readyz, which needs no key, with the database
// unreachable) tells the caller neither the address nor the host name
// inside the operator's network; the log keeps them.
func TestServerSideFailuresNameNoAddress(t *testing.T) {
	b := setup(t)
	var logs bytes.Buffer
	down := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 5432},
		Err: &net.DNSError{Err: "no such host", Name: "db.internal", Server: "10.0.0.2:53"}}
	h := server.New(server.Config{Claims: b.store, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Ready: func(context.Context) error {
		return fmt.Errorf("metadata: ping: %w", down)
	}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	e := wantError(t, rec.Result(), rec.Body.Bytes(), http.StatusServiceUnavailable, api.CodeUnavailable)
	for _, secret := range []string{"10.0.0.5", "db.internal", "10.0.0.2", "5432"} {
		if strings.Contains(e.Message, secret) {
			t.Errorf("the answer %q names %s", e.Message, secret)
		}
		if !strings.Contains(logs.String(), secret) {
			t.Errorf("the log lost %s: %s", secret, logs.String())
		}
	}
	if !strings.Contains(e.Message, "database or storage") {
		t.Errorf("the answer %q does not say what failed", e.Message)
	}
}
