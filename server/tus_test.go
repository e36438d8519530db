package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
	"github.com/claimcheck/claimcheck/sweep"
)

// Resumable uploads over tus (tus.go), spoken with plain HTTP the way a
// tus client does, against a loopback server in front of the real store:
// SQLite and files, and PostgreSQL with MinIO.

// tusBundle is a tus test's server and store.
type tusBundle struct {
	store *engine.Store
	meta  meta.Store
	http  *httptest.Server
	token string // the API key to send; "" with auth off
	clock *clock.Fake
	dir   string // the data directory (blobs under blobs/ on files)
	// On S3: the service and bucket, to look for multipart uploads.
	s3     *s3.Client
	bucket string
}

// tusBackends runs fn on SQLite + files and on PostgreSQL + MinIO.
func tusBackends(t *testing.T, fn func(t *testing.T, b *tusBundle)) {
	t.Run("file", func(t *testing.T) { fn(t, setupTus(t, false)) })
	t.Run("s3", func(t *testing.T) { fn(t, setupTus(t, true)) })
}

func setupTus(t *testing.T, s3 bool) *tusBundle {
	t.Helper()
	dir := t.TempDir()
	tb := tusBackend{
		dsn:   "sqlite:" + filepath.Join(dir, "claimcheck.db"),
		clock: clock.NewFake(time.Now().UTC().Truncate(time.Second)),
	}
	if s3 {
		tb.dsn, _ = testsvc.Postgres(t)
		tb.storage, tb.s3, tb.bucket = testsvc.S3(t)
	}
	return tb.open(t, dir, nil)
}

// tusBackend is what the servers of a tus test share: the metadata
// store's DSN, the object storage (none: files in the data directory),
// the clock.
type tusBackend struct {
	dsn     string
	storage string
	s3      *s3.Client
	bucket  string
	clock   *clock.Fake
}

// open starts a store over the backend with its data directory in dir,
// and a loopback server in front of it, its handler wrapped by wrap if
// set.
func (tb tusBackend) open(t *testing.T, dir string, wrap func(http.Handler) http.Handler) *tusBundle {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	cfg := engine.Config{
		Data: dir, Logger: logger, Clock: tb.clock, Sweeper: sweep.Config{Disabled: true}, Storage: tb.storage,
		Namespaces: map[string]claimcheck.Policy{
			"raw":   {Compression: claimcheck.CompressionNone},
			"zstd":  {},
			"tiny":  {MaxSize: 1 << 10, Threshold: 1},
			"quota": {Compression: claimcheck.CompressionNone, Quota: claimcheck.Quota{Bytes: 1 << 20}},
			"vault": {Encryption: claimcheck.EncryptionAES256GCM},
		},
		MasterKey: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
	}
	b := &tusBundle{clock: tb.clock, dir: dir, s3: tb.s3, bucket: tb.bucket}
	m, err := sqlmeta.Open(ctx, tb.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	cfg.MetaStore = m
	b.meta = m
	b.store = enginetest.Open(t, cfg)
	var h http.Handler = checkContract(t, false, server.New(server.Config{Claims: b.store, Logger: logger}))
	if wrap != nil {
		h = wrap(h)
	}
	b.http = httptest.NewServer(h)
	t.Cleanup(b.http.Close)
	return b
}

// do sends a tus request (Tus-Resumable set unless given) to path, a
// path or an absolute URL.
func (b *tusBundle) do(t *testing.T, method, path string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	if !strings.HasPrefix(path, "http") {
		path = b.http.URL + path
	}
	req, err := http.NewRequest(method, path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Tus-Resumable", "1.0.0")
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
			continue
		}
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

// tusMetadata encodes Upload-Metadata.
func tusMetadata(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, kv[i]+" "+base64.StdEncoding.EncodeToString([]byte(kv[i+1])))
	}
	return strings.Join(parts, ",")
}

func sha256Hex(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func chunkChecksum(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256 " + base64.StdEncoding.EncodeToString(s[:])
}

// create starts an upload and returns its URL.
func (b *tusBundle) create(t *testing.T, ns string, size int, metadata string) string {
	t.Helper()
	resp, body := b.do(t, "POST", "/v1/namespaces/"+ns+"/tus", nil,
		"Upload-Length", strconv.Itoa(size), "Upload-Metadata", metadata)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %s %s", resp.Status, body)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, b.http.URL+"/v1/tus/cc_") {
		t.Fatalf("Location %q is not an upload of this server", loc)
	}
	if _, err := http.ParseTime(resp.Header.Get("Upload-Expires")); err != nil {
		t.Errorf("Upload-Expires %q: %v", resp.Header.Get("Upload-Expires"), err)
	}
	return loc
}

// patch sends one chunk at offset.
func (b *tusBundle) patch(t *testing.T, loc string, offset int, chunk []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	h := append([]string{"Content-Type", "application/offset+octet-stream", "Upload-Offset", strconv.Itoa(offset)}, header...)
	return b.do(t, "PATCH", loc, chunk, h...)
}

func (b *tusBundle) offset(t *testing.T, loc string) (int, *http.Response) {
	t.Helper()
	resp, _ := b.do(t, "HEAD", loc, nil, "Tus-Resumable", "")
	if resp.StatusCode != http.StatusOK {
		return -1, resp
	}
	n, err := strconv.Atoi(resp.Header.Get("Upload-Offset"))
	if err != nil {
		t.Fatalf("HEAD: Upload-Offset %q", resp.Header.Get("Upload-Offset"))
	}
	return n, resp
}

func (b *tusBundle) usage(t *testing.T, ns string) (reserved, used int64) {
	t.Helper()
	n, err := b.meta.Namespace(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return n.ReservedBytes, n.UsedBytes
}

func (b *tusBundle) redeem(t *testing.T, ref claimcheck.Ref) []byte {
	t.Helper()
	p, err := b.store.Redeem(context.Background(), ref)
	if err != nil {
		t.Fatalf("redeem: %v", err)
	}
	defer p.Close()
	data, err := io.ReadAll(p)
	if err != nil {
		t.Fatalf("redeem: %v", err)
	}
	return data
}

func tusData(t *testing.T, n int) []byte {
	d := make([]byte, n)
	rand.Read(d)
	return d
}

// wantTusError checks a JSON error answer's status, code and that its
// message names what it must.
func wantTusError(t *testing.T, resp *http.Response, body []byte, status int, code string, names ...string) {
	t.Helper()
	var e api.Error
	if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != status || e.Code != code {
		t.Fatalf("answer %s %s, want %d %s", resp.Status, body, status, code)
	}
	for _, n := range names {
		if !strings.Contains(e.Message, n) {
			t.Errorf("message %q does not name %q", e.Message, n)
		}
	}
}

// TestTusRoundTrip uploads a payload in chunks (one with a checksum),
// gets the claim's ref on the last chunk and on a later HEAD, and
// redeems the same bytes, in a namespace that stores them as they came
// and in one that compresses.
func TestTusRoundTrip(t *testing.T) {
	tusBackends(t, func(t *testing.T, b *tusBundle) {
		for _, ns := range []string{"raw", "zstd"} {
			data := tusData(t, 6<<20+5)
			loc := b.create(t, ns, len(data), tusMetadata("sha256", sha256Hex(data), "filename", "x.bin", "filetype", "application/x-test"))
			cuts := []int{0, 1 << 20, 5<<20 + 3, len(data)}
			var last *http.Response
			for i := 0; i+1 < len(cuts); i++ {
				chunk := data[cuts[i]:cuts[i+1]]
				resp, body := b.patch(t, loc, cuts[i], chunk, "Upload-Checksum", chunkChecksum(chunk))
				if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Upload-Offset") != strconv.Itoa(cuts[i+1]) {
					t.Fatalf("PATCH at %d: %s %s (Upload-Offset %q)", cuts[i], resp.Status, body, resp.Header.Get("Upload-Offset"))
				}
				if i < len(cuts)-2 && resp.Header.Get(api.HeaderRef) != "" {
					t.Errorf("a PATCH before the last answered a ref")
				}
				last = resp
			}
			raw := last.Header.Get(api.HeaderRef)
			var ref claimcheck.Ref
			if err := json.Unmarshal([]byte(raw), &ref); err != nil {
				t.Fatalf("%s: the last PATCH answered Claimcheck-Ref %q: %v", ns, raw, err)
			}
			if ref.String() != raw || ref.Size != int64(len(data)) || ref.Digest != "sha256:"+sha256Hex(data) {
				t.Errorf("%s: ref %s, want the put's form of %d bytes with the payload's digest", ns, raw, len(data))
			}
			if got := b.redeem(t, ref); !bytes.Equal(got, data) {
				t.Fatalf("%s: redeemed bytes differ from the uploaded ones", ns)
			}
			info, err := b.store.Stat(context.Background(), ref)
			if err != nil || info.ContentType != "application/x-test" {
				t.Errorf("%s: stat = %+v, %v; want the filetype as content type", ns, info, err)
			}
			n, resp := b.offset(t, loc)
			if n != len(data) || resp.Header.Get(api.HeaderRef) != raw {
				t.Errorf("%s: HEAD after completion: offset %d, ref %q; want %d and the same ref", ns, n, resp.Header.Get(api.HeaderRef), len(data))
			}
			resp, body := b.patch(t, loc, len(data), []byte("more"))
			wantTusError(t, resp, body, http.StatusBadRequest, api.CodeInvalidArgument, "complete")
			if r, used := b.usage(t, ns); r != 0 || used == 0 {
				t.Errorf("%s: reserved %d, used %d after completion", ns, r, used)
			}
		}
	})
}

// TestTusResume cuts a PATCH off mid-body (the connection closes): HEAD
// says how much arrived, and the rest completes the upload.
func TestTusResume(t *testing.T) {
	tusBackends(t, func(t *testing.T, b *tusBundle) {
		data := tusData(t, 3<<20)
		loc := b.create(t, "raw", len(data), tusMetadata("sha256", sha256Hex(data)))
		sent := 2<<20 + 11
		conn, err := net.Dial("tcp", strings.TrimPrefix(b.http.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		path := strings.TrimPrefix(loc, b.http.URL)
		if _, err := fmt.Fprintf(conn, "PATCH %s HTTP/1.1\r\nHost: x\r\nTus-Resumable: 1.0.0\r\nContent-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\nContent-Length: %d\r\n\r\n", path, len(data)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(data[:sent]); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		// The server notices the cut when its read of the body fails,
		// and records what arrived. A HEAD sent earlier would interrupt
		// the PATCH (a new request for an upload takes over from the one
		// in progress, as tus wants), so wait for the record in the
		// database, which takes no lock.
		id := loc[strings.LastIndex(loc, "/")+1:]
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if r, err := b.meta.Resumable(context.Background(), id); err == nil && r.Received == int64(sent) {
				break
			}
		}
		if n, _ := b.offset(t, loc); n != sent {
			t.Fatalf("HEAD after a cut PATCH: offset %d, want the %d bytes sent", n, sent)
		}
		resp, body := b.patch(t, loc, 0, data)
		wantTusError(t, resp, body, http.StatusConflict, api.CodeInvalidArgument, "Upload-Offset")
		resp, body = b.patch(t, loc, sent, data[sent:])
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get(api.HeaderRef) == "" {
			t.Fatalf("resumed PATCH: %s %s", resp.Status, body)
		}
		var ref claimcheck.Ref
		if err := json.Unmarshal([]byte(resp.Header.Get(api.HeaderRef)), &ref); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.redeem(t, ref), data) {
			t.Fatal("the resumed upload redeems other bytes")
		}
	})
}

// TestTusChecksumMismatch: a chunk that does not match Upload-Checksum
// is 460 and leaves the offset; a payload that does not match its sha256
// metadata is 460 on its last chunk, stores nothing and refunds.
func TestTusChecksumMismatch(t *testing.T) {
	tusBackends(t, func(t *testing.T, b *tusBundle) {
		data := tusData(t, 100_000)
		loc := b.create(t, "raw", len(data), "")
		b.patch(t, loc, 0, data[:1000])
		resp, body := b.patch(t, loc, 1000, data[1000:2000], "Upload-Checksum", chunkChecksum(data[:1000]))
		wantTusError(t, resp, body, 460, api.CodeChecksumMismatch, "Upload-Checksum")
		if n, _ := b.offset(t, loc); n != 1000 {
			t.Errorf("offset after a refused chunk = %d, want 1000", n)
		}
		resp, body = b.patch(t, loc, 1000, data[1000:2000], "Upload-Checksum", "md5 AAAA")
		wantTusError(t, resp, body, http.StatusBadRequest, api.CodeInvalidArgument, "Upload-Checksum", "sha256")

		other := b.create(t, "raw", len(data), tusMetadata("sha256", sha256Hex([]byte("other"))))
		resp, body = b.patch(t, other, 0, data)
		wantTusError(t, resp, body, 460, api.CodeChecksumMismatch, "sha256", "nothing was stored")
		if _, resp := b.offset(t, other); resp.StatusCode != http.StatusGone {
			t.Errorf("HEAD of the refused upload: %s, want 410", resp.Status)
		}
		if r, used := b.usage(t, "raw"); r != int64(len(data)) || used != 0 {
			// Only the first upload still holds its reservation.
			t.Errorf("reserved %d, used %d; want only the first upload's %d reserved", r, used, len(data))
		}
		resp, body = b.do(t, "POST", "/v1/namespaces/raw/tus", nil, "Upload-Length", "10", "Upload-Metadata", tusMetadata("sha256", "ABC"))
		wantTusError(t, resp, body, http.StatusBadRequest, api.CodeInvalidArgument, "Upload-Metadata", "sha256")
	})
}

// TestTusLimits: Upload-Length past max_size is 413 naming it and the
// limit; past the quota 403 quota_exceeded; the tus version is checked.
func TestTusLimits(t *testing.T) {
	b := setupTus(t, false)
	resp, body := b.do(t, "POST", "/v1/namespaces/tiny/tus", nil, "Upload-Length", "2048")
	wantTusError(t, resp, body, http.StatusRequestEntityTooLarge, api.CodeTooLarge, "Upload-Length", "max_size", "1024")
	b.create(t, "quota", 600<<10, "")
	resp, body = b.do(t, "POST", "/v1/namespaces/quota/tus", nil, "Upload-Length", strconv.Itoa(600<<10))
	wantTusError(t, resp, body, http.StatusForbidden, api.CodeQuotaExceeded, "Upload-Length")
	resp, body = b.do(t, "POST", "/v1/namespaces/raw/tus", nil, "Upload-Length", "10", "Tus-Resumable", "0.2.2")
	wantTusError(t, resp, body, http.StatusPreconditionFailed, api.CodeInvalidArgument, "Tus-Resumable")
	if resp.Header.Get("Tus-Version") != "1.0.0" {
		t.Errorf("412 without Tus-Version: 1.0.0")
	}
	resp, body = b.do(t, "POST", "/v1/namespaces/raw/tus", nil, "Upload-Defer-Length", "1")
	wantTusError(t, resp, body, http.StatusBadRequest, api.CodeInvalidArgument, "Upload-Defer-Length")
	resp, body = b.do(t, "POST", "/v1/namespaces/raw/tus", nil, "Upload-Length", "x")
	wantTusError(t, resp, body, http.StatusBadRequest, api.CodeInvalidArgument, "Upload-Length")
}

// TestTusTerminate: DELETE drops the upload and refunds at once.
func TestTusTerminate(t *testing.T) {
	tusBackends(t, func(t *testing.T, b *tusBundle) {
		data := tusData(t, 5<<20+10)
		loc := b.create(t, "raw", len(data), "")
		b.patch(t, loc, 0, data[:5<<20+1])
		if r, _ := b.usage(t, "raw"); r != int64(len(data)) {
			t.Fatalf("reserved %d, want %d", r, len(data))
		}
		if resp, body := b.do(t, "DELETE", loc, nil); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %s %s", resp.Status, body)
		}
		if r, used := b.usage(t, "raw"); r != 0 || used != 0 {
			t.Errorf("after DELETE: reserved %d, used %d; want nothing", r, used)
		}
		if _, resp := b.offset(t, loc); resp.StatusCode != http.StatusGone {
			t.Errorf("HEAD after DELETE: %s, want 410", resp.Status)
		}
		if resp, body := b.do(t, "DELETE", loc, nil); resp.StatusCode != http.StatusNoContent {
			t.Errorf("a second DELETE: %s %s, want 204 as for a deleted claim", resp.Status, body)
		}
		resp, body := b.patch(t, loc, 5<<20+1, data[5<<20+1:])
		wantTusError(t, resp, body, http.StatusGone, api.CodeGone)
	})
}

// TestTusDiscoveryAndCORS: OPTIONS answers tus discovery; a page of an
// allowed origin may send tus's headers and read its answers.
func TestTusDiscoveryAndCORS(t *testing.T) {
	b := setupTus(t, false)
	resp, _ := b.do(t, "OPTIONS", "/v1/namespaces/tiny/tus", nil)
	for h, want := range map[string]string{"Tus-Version": "1.0.0", "Tus-Max-Size": "1024", "Tus-Checksum-Algorithm": "sha1,sha256"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("OPTIONS: %s = %q, want %q", h, got, want)
		}
	}
	for _, ext := range []string{"creation", "creation-with-upload", "termination", "expiration", "checksum"} {
		if !strings.Contains(resp.Header.Get("Tus-Extension"), ext) {
			t.Errorf("Tus-Extension %q lacks %s", resp.Header.Get("Tus-Extension"), ext)
		}
	}

	const origin = "https://app.example.com"
	srv := httptest.NewServer(checkContract(t, false, server.New(server.Config{Claims: b.store,
		Limits: server.Limits{CORS: server.CORS{AllowedOrigins: server.Origins{origin}}}})))
	defer srv.Close()
	req, _ := http.NewRequest("OPTIONS", srv.URL+"/v1/tus/cc_8ydDXrWudIIkHqL50bxe7w", nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "PATCH")
	req.Header.Set("Access-Control-Request-Headers", "tus-resumable,upload-offset,upload-checksum,content-type,authorization")
	pre, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pre.Body.Close()
	allowed := strings.ToLower(pre.Header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"tus-resumable", "upload-length", "upload-offset", "upload-metadata", "upload-checksum", "content-type", "authorization"} {
		if !strings.Contains(allowed, h) {
			t.Errorf("preflight allows headers %q, not %s", allowed, h)
		}
	}
	for _, m := range []string{"PATCH", "HEAD", "DELETE"} {
		if !strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), m) {
			t.Errorf("preflight allows methods %q, not %s", pre.Header.Get("Access-Control-Allow-Methods"), m)
		}
	}
	req, _ = http.NewRequest("POST", srv.URL+"/v1/namespaces/raw/tus", nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", "3")
	created, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	created.Body.Close()
	exposed := created.Header.Get("Access-Control-Expose-Headers")
	for _, h := range []string{"Location", "Upload-Offset", "Upload-Length", "Upload-Expires", "Upload-Metadata", "Tus-Resumable", "Tus-Version", "Tus-Extension", "Tus-Max-Size", "Claimcheck-Ref"} {
		if !strings.Contains(exposed, h) {
			t.Errorf("exposed headers %q lack %s", exposed, h)
		}
	}
	if created.StatusCode != http.StatusCreated {
		t.Errorf("create from an allowed origin: %s", created.Status)
	}
}

// TestTusTenants: another tenant's key, or a key limited to another
// namespace, sees a tenant's upload as absent.
func TestTusTenants(t *testing.T) {
	a := setupAuth(t, server.Limits{})
	producer := a.key(t, "acme", auth.RoleProducer, "")
	b := &tusBundle{store: a.store, meta: a.meta, http: a.http, token: producer}
	data := tusData(t, 1000)
	loc := b.create(t, "a2", len(data), "")
	for _, key := range []string{a.key(t, "beta", auth.RoleProducer, ""), a.key(t, "acme", auth.RoleProducer, "a1")} {
		other := &tusBundle{http: a.http, token: key}
		if _, resp := other.offset(t, loc); resp.StatusCode != http.StatusNotFound {
			t.Errorf("HEAD with another key: %s, want 404", resp.Status)
		}
		resp, body := other.patch(t, loc, 0, data)
		wantTusError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
		resp, body = other.do(t, "DELETE", loc, nil)
		wantTusError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
	}
	resp, body := b.do(t, "POST", "/v1/namespaces/b1/tus", nil, "Upload-Length", "10")
	wantTusError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
	if resp, body := b.patch(t, loc, 0, data); resp.StatusCode != http.StatusNoContent || resp.Header.Get(api.HeaderRef) == "" {
		t.Fatalf("the owner's PATCH: %s %s", resp.Status, body)
	}
	noKey := &tusBundle{http: a.http}
	if _, resp := noKey.offset(t, loc); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("HEAD without a key: %s, want 401", resp.Status)
	}
}

// TestTusEmpty: an empty payload is complete on creation; the 201
// carries its ref.
func TestTusEmpty(t *testing.T) {
	tusBackends(t, func(t *testing.T, b *tusBundle) {
		resp, body := b.do(t, "POST", "/v1/namespaces/raw/tus", nil, "Upload-Length", "0",
			"Upload-Metadata", tusMetadata("sha256", sha256Hex(nil)))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %s %s", resp.Status, body)
		}
		var ref claimcheck.Ref
		if err := json.Unmarshal([]byte(resp.Header.Get(api.HeaderRef)), &ref); err != nil || ref.Size != 0 {
			t.Fatalf("Claimcheck-Ref %q: %v", resp.Header.Get(api.HeaderRef), err)
		}
		if got := b.redeem(t, ref); len(got) != 0 {
			t.Errorf("redeemed %d bytes of an empty upload", len(got))
		}
		if n, resp := b.offset(t, resp.Header.Get("Location")); n != 0 || resp.Header.Get(api.HeaderRef) == "" {
			t.Errorf("HEAD: offset %d, ref %q", n, resp.Header.Get(api.HeaderRef))
		}
	})
}

// TestTusAbandoned leaves uploads at several offsets (nothing, inside
// the first part, past a whole S3 part): once confirm_within passes
// without progress, one sweep reaps them, with no multipart upload, no
// staging object or file left and the reservations refunded exactly.
func TestTusAbandoned(t *testing.T) {
	tusBackends(t, func(t *testing.T, b *tusBundle) {
		data := tusData(t, 6<<20)
		var locs, keys []string
		for _, n := range []int{0, 100_000, 5<<20 + 7} {
			loc := b.create(t, "raw", len(data), "")
			if n > 0 {
				if resp, body := b.patch(t, loc, 0, data[:n]); resp.StatusCode != http.StatusNoContent {
					t.Fatalf("PATCH: %s %s", resp.Status, body)
				}
			}
			r, err := b.meta.Resumable(context.Background(), loc[strings.LastIndex(loc, "/")+1:])
			if err != nil {
				t.Fatal(err)
			}
			locs, keys = append(locs, loc), append(keys, r.Key)
		}
		if r, _ := b.usage(t, "raw"); r != 3*int64(len(data)) {
			t.Fatalf("reserved %d, want %d", r, 3*len(data))
		}
		staging := func(k string) string { return filepath.Join(b.dir, "blobs", filepath.FromSlash(k)) }
		if b.s3 == nil {
			for _, k := range keys {
				if _, err := os.Stat(staging(k)); err != nil {
					t.Fatalf("staging file of %s before the sweep: %v", k, err)
				}
			}
		} else if out, err := b.s3.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(b.bucket)}); err != nil || len(out.Uploads) != 3 {
			t.Fatalf("multipart uploads before the sweep: %d, %v; want 3", len(out.Uploads), err)
		}
		b.clock.Advance(claimcheck.DefaultConfirmWithin.D() + time.Second)
		if _, err := b.store.SweepOnce(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
		if r, used := b.usage(t, "raw"); r != 0 || used != 0 {
			t.Errorf("after the sweep: reserved %d, used %d; want nothing", r, used)
		}
		for _, loc := range locs {
			if _, resp := b.offset(t, loc); resp.StatusCode != http.StatusGone {
				t.Errorf("HEAD of a reaped upload: %s, want 410", resp.Status)
			}
		}
		if b.s3 != nil {
			out, err := b.s3.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(b.bucket)})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Uploads) != 0 {
				t.Errorf("%d multipart uploads left in the bucket", len(out.Uploads))
			}
			if n := testsvc.CountObjects(t, b.s3, b.bucket); n != 0 {
				t.Errorf("%d objects left in the bucket", n)
			}
			return
		}
		for _, k := range keys {
			if _, err := os.Stat(staging(k)); !os.IsNotExist(err) {
				t.Errorf("staging file of %s: %v, want none", k, err)
			}
		}
	})
}

// TestTusCreationWithUpload sends bytes with the creation request (tus's
// creation-with-upload): all of them, which completes the upload on the
// POST itself, and a first part, which the next PATCH continues.
func TestTusCreationWithUpload(t *testing.T) {
	tusBackends(t, func(t *testing.T, b *tusBundle) {
		data := tusData(t, 1<<20+7)
		meta := tusMetadata("sha256", sha256Hex(data))
		resp, body := b.do(t, "POST", "/v1/namespaces/raw/tus", data,
			"Upload-Length", strconv.Itoa(len(data)), "Upload-Metadata", meta,
			"Content-Type", "application/offset+octet-stream", "Upload-Checksum", chunkChecksum(data[1:]))
		if resp.StatusCode != 460 {
			t.Fatalf("creation with a body that fails its Upload-Checksum: %s %s", resp.Status, body)
		}
		resp, body = b.do(t, "POST", "/v1/namespaces/raw/tus", data,
			"Upload-Length", strconv.Itoa(len(data)), "Upload-Metadata", meta,
			"Content-Type", "application/offset+octet-stream", "Upload-Checksum", chunkChecksum(data))
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Upload-Offset") != strconv.Itoa(len(data)) {
			t.Fatalf("creation with the whole payload: %s %s (Upload-Offset %q)", resp.Status, body, resp.Header.Get("Upload-Offset"))
		}
		var ref claimcheck.Ref
		if err := json.Unmarshal([]byte(resp.Header.Get(api.HeaderRef)), &ref); err != nil {
			t.Fatalf("the completing POST answered Claimcheck-Ref %q: %v", resp.Header.Get(api.HeaderRef), err)
		}
		if got := b.redeem(t, ref); !bytes.Equal(got, data) {
			t.Fatal("redeemed bytes differ from the ones sent on creation")
		}

		data = tusData(t, 1<<20+9)
		resp, body = b.do(t, "POST", "/v1/namespaces/zstd/tus", data[:1000],
			"Upload-Length", strconv.Itoa(len(data)), "Upload-Metadata", tusMetadata("sha256", sha256Hex(data)),
			"Content-Type", "application/offset+octet-stream")
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Upload-Offset") != "1000" || resp.Header.Get(api.HeaderRef) != "" {
			t.Fatalf("creation with a first part: %s %s (Upload-Offset %q)", resp.Status, body, resp.Header.Get("Upload-Offset"))
		}
		loc := resp.Header.Get("Location")
		resp, body = b.patch(t, loc, 1000, data[1000:])
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get(api.HeaderRef) == "" {
			t.Fatalf("PATCH after a creation with a part: %s %s", resp.Status, body)
		}
		if err := json.Unmarshal([]byte(resp.Header.Get(api.HeaderRef)), &ref); err != nil {
			t.Fatal(err)
		}
		if got := b.redeem(t, ref); !bytes.Equal(got, data) {
			t.Fatal("redeemed bytes differ from the ones sent on creation and after")
		}
	})
}

// TestTusShredded: destroying the namespace's key ends its uploads in
// progress (ADR 0255): HEAD answers 410 with the reason in a
// Claimcheck-Error header (a HEAD has no body), and no longer tells the
// declared sha256; a PATCH answers gone.
func TestTusShredded(t *testing.T) {
	b := setupTus(t, false)
	data := tusData(t, 64<<10)
	if _, err := b.store.Put(t.Context(), "vault", bytes.NewReader([]byte("sealed")), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	loc := b.create(t, "vault", len(data), tusMetadata("sha256", sha256Hex(data)))
	if resp, body := b.patch(t, loc, 0, data[:1000]); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PATCH: %s %s", resp.Status, body)
	}
	if resp, body := b.do(t, "DELETE", "/v1/namespaces/vault/key?confirm=vault", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("destroy key: %s %s", resp.Status, body)
	}
	_, resp := b.offset(t, loc)
	if resp.StatusCode != http.StatusGone || !strings.Contains(resp.Header.Get(api.TrailerError), string(claimcheck.ReasonKeyDestroyed)) {
		t.Fatalf("HEAD after the shred: %s, %s: %q; want 410 naming key_destroyed", resp.Status, api.TrailerError, resp.Header.Get(api.TrailerError))
	}
	if m := resp.Header.Get(api.HeaderUploadMetadata); strings.Contains(m, "sha256") {
		t.Errorf("HEAD after the shred still tells the declared sha256: %q", m)
	}
	resp, body := b.patch(t, loc, 1000, data[1000:])
	wantTusError(t, resp, body, http.StatusGone, api.CodeGone)
}
