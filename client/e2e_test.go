package client_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/claimstest"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/server"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// bundle is a client talking over real HTTP to a server in front of the
// real embedded store (SQLite and files in a temporary directory).
type bundle struct {
	store  *engine.Store
	meta   meta.Store // the store's metadata, to check what is stored
	clock  *clock.Fake
	reg    *prometheus.Registry
	http   *httptest.Server
	client *client.Client
	dir    string
}

// namespaces used by the tests; every other name gets the defaults.
var testNamespaces = map[string]claimcheck.Policy{
	"raw":   {Compression: claimcheck.CompressionNone},
	"small": {MaxSize: 1 << 20, Threshold: 1024},
	"short": {TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(time.Hour)}},
}

// setup starts the server over a fresh store. wrap, if given, wraps the
// store before the server gets it (fault injection).
func setup(t *testing.T, wrap ...func(server.Store) server.Store) *bundle {
	t.Helper()
	return setupWith(t, nil, wrap...)
}

// setupWith is setup with the server's handler wrapped by mw, when set:
// a server that answers otherwise than this one.
func setupWith(t *testing.T, mw func(http.Handler) http.Handler, wrap ...func(server.Store) server.Store) *bundle {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b := &bundle{meta: m, clock: clock.NewFake(t0), reg: prometheus.NewRegistry(), dir: dir}
	b.store = enginetest.Open(t, engine.Config{
		Data: dir, Namespaces: testNamespaces, MetaStore: m,
		Clock: b.clock, Logger: logger, Registerer: b.reg,
	})
	var claims server.Store = b.store
	for _, w := range wrap {
		claims = w(claims)
	}
	var h http.Handler = server.New(server.Config{
		Claims: claims, Ready: b.store.Ready, Gatherer: b.reg, Registerer: b.reg, Logger: logger,
	})
	if mw != nil {
		h = mw(h)
	}
	b.http = httptest.NewServer(h)
	t.Cleanup(b.http.Close)
	if b.client, err = client.New(b.http.URL); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bundle) put(t *testing.T, ns string, data []byte, opts claimcheck.PutOptions) claimcheck.Ref {
	t.Helper()
	ref, err := b.client.Put(context.Background(), ns, bytes.NewReader(data), opts)
	if err != nil {
		t.Fatalf("put %d bytes to %s: %v", len(data), ns, err)
	}
	return ref
}

func (b *bundle) redeem(ref claimcheck.Ref) ([]byte, error) {
	p, err := b.client.Redeem(context.Background(), ref)
	if err != nil {
		return nil, err
	}
	return p.Bytes()
}

// objects lists the files in the store's blob directory.
func (b *bundle) objects(t *testing.T) []string {
	t.Helper()
	var keys []string
	root := filepath.Join(b.dir, "blobs")
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !blob.IsOwnerMarker(d.Name()) {
			rel, _ := filepath.Rel(root, path)
			keys = append(keys, rel)
		}
		return nil
	})
	return keys
}

// assertNothingStored checks, in the store's metadata and on disk, that ns
// holds no claim, no usage and no reservation, and that no object is left
// once the sweeper has run.
func (b *bundle) assertNothingStored(t *testing.T, ns string) {
	t.Helper()
	n, err := b.meta.Namespace(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	if n.ActiveClaims != 0 || n.PendingClaims != 0 || n.UsedBytes != 0 || n.ReservedBytes != 0 {
		t.Errorf("namespace %s after a failed put: %+v, want nothing", ns, n)
	}
	// A put that failed after its object was written leaves the object
	// to a staging blob that is due at once: one sweep reclaims it.
	if _, err := b.store.SweepOnce(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	if objs := b.objects(t); len(objs) != 0 {
		t.Errorf("objects left after a failed put and a sweep: %v", objs)
	}
	if got := metrictest.Sum(t, b.reg, "claimcheck_claims_created_total"); got != 0 {
		t.Errorf("claims created: %v, want 0", got)
	}
}

// jsonDoc returns a deterministic JSON document of about n bytes.
func jsonDoc(n int) []byte { return claimstest.JSONDoc(n, 1) }

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCorruptObject flips a byte of a stored object: the client must fail
// with ErrChecksumMismatch and never hand the bytes over. The server
// sends this client, which verifies every payload itself, an object
// stored uncompressed as it is stored, with only its length checked
// (ADR 0155): the client's own sha256 finds the flipped byte, whatever
// the size, and it has the server mark the blob damaged.
func TestCorruptObject(t *testing.T) {
	for _, size := range []int{10 << 10, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			b := setup(t)
			data := jsonDoc(size)
			ref := b.put(t, "raw", data, claimcheck.PutOptions{})
			objs := b.objects(t)
			if len(objs) != 1 {
				t.Fatalf("want one object, have %v", objs)
			}
			path := filepath.Join(b.dir, "blobs", objs[0])
			stored, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(stored, data) {
				t.Fatal("the object of an uncompressed namespace is not the payload")
			}
			stored[len(stored)-100] ^= 0x01
			if err := os.WriteFile(path, stored, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := b.redeem(ref)
			if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
				t.Fatalf("redeem of a corrupted object: %d bytes, %v; want ErrChecksumMismatch", len(got), err)
			}
			if got != nil {
				t.Fatal("corrupt bytes were handed over")
			}
			// The client told the server (reportDamage): the blob is
			// marked damaged, and the next redeem is refused before any
			// byte (ADR 0095).
			if _, err := b.client.Redeem(context.Background(), ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
				t.Fatalf("redeem after the client found the damage: %v, want ErrChecksumMismatch at once", err)
			}
		})
	}
}

// failingReader yields n bytes of data, then fails.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

var errDisk = errors.New("disk on fire")

// TestBrokenBody: a body that fails part-way, sent chunked or with its
// length, or a put cancelled part-way, fails the put with the reader's or
// the context's error and leaves nothing stored. (A body shorter or
// longer than declared is the contract's, checked by TestConformance.)
func TestBrokenBody(t *testing.T) {
	data := randomBytes(t, 3<<20)
	tests := []struct {
		name string
		body func() io.Reader
		size int64
		want error
	}{
		{"fails, chunked", func() io.Reader { return &failingReader{data[:1<<20], errDisk} }, 0, errDisk},
		{"fails, with length", func() io.Reader { return &failingReader{data[:1<<20], errDisk} }, int64(len(data)), errDisk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			_, err := b.client.Put(context.Background(), "raw", tt.body(), claimcheck.PutOptions{Size: tt.size})
			if !errors.Is(err, tt.want) {
				t.Fatalf("put: %v, want %v", err, tt.want)
			}
			b.waitIdle(t)
			b.assertNothingStored(t, "raw")
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		b := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		body := &cancellingReader{r: bytes.NewReader(data), after: 1 << 20, cancel: cancel}
		_, err := b.client.Put(ctx, "raw", body, claimcheck.PutOptions{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("put: %v, want context.Canceled", err)
		}
		b.waitIdle(t)
		b.assertNothingStored(t, "raw")
	})
}

// cancellingReader cancels the put's context once after bytes were read,
// and gives no more bytes from then on. Were it to go on, the transport
// could push the rest of the body into the loopback socket's buffers
// before it noticed the cancellation, and the server, having received it
// all, would rightly commit the put.
type cancellingReader struct {
	r      io.Reader
	after  int
	n      int
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	if c.n >= c.after {
		return 0, context.Canceled
	}
	n, err := c.r.Read(p)
	c.n += n
	if c.n >= c.after {
		c.cancel()
	}
	return n, err
}

// waitIdle waits until the server has finished every request: a client
// may see its upload fail before the server's handler has cleaned up.
// httptest.Server.Close blocks until then.
func (b *bundle) waitIdle(t *testing.T) {
	t.Helper()
	b.http.Close()
}

// TestClientVerifies: the client checks size and digest itself, so a
// stream altered or cut on the way (here by a proxy that passes the
// server's empty trailer on, or none at all) is never taken as whole.
func TestClientVerifies(t *testing.T) {
	tests := []struct {
		name   string
		mangle func([]byte) []byte
	}{
		{"byte flipped", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }},
		{"cut short", func(b []byte) []byte { return b[:len(b)/2] }},
		{"extra bytes", func(b []byte) []byte { return append(b, "tail"...) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			data := jsonDoc(200 << 10)
			ref := b.put(t, "orders", data, claimcheck.PutOptions{})
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				resp, err := http.Get(b.http.URL + r.URL.RequestURI())
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				for k, v := range resp.Header {
					w.Header()[k] = v
				}
				// The proxy sends the length of what it sends, as a proxy
				// that changes a body does (the server's Content-Length
				// would make the proxy's own server refuse the body).
				w.Header().Del("Content-Length")
				w.WriteHeader(resp.StatusCode)
				_, _ = w.Write(tt.mangle(body))
			}))
			defer proxy.Close()
			c, err := client.New(proxy.URL)
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.Redeem(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Bytes()
			if got != nil || !errors.Is(err, claimcheck.ErrChecksumMismatch) {
				t.Fatalf("mangled stream: %d bytes, %v; want ErrChecksumMismatch", len(got), err)
			}
		})
	}
}

// TestDefaultContentType: a payload stored without a content type comes
// back as application/octet-stream, the server's default on the wire.
func TestDefaultContentType(t *testing.T) {
	b := setup(t)
	ref := b.put(t, "orders", []byte("untyped"), claimcheck.PutOptions{})
	p, err := b.client.Redeem(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Bytes(); err != nil {
		t.Fatal(err)
	}
	if p.ContentType != "application/octet-stream" {
		t.Errorf("content type %q, want application/octet-stream", p.ContentType)
	}
}

// TestServerRefusesMalformedID: the client refuses a malformed claim id
// before sending it (TestConformance checks that); the server refuses it
// too, for other clients.
func TestServerRefusesMalformedID(t *testing.T) {
	b := setup(t)
	resp, err := http.Get(b.http.URL + "/v1/claims/nonsense")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /v1/claims/nonsense: %s, want 400", resp.Status)
	}
}

// TestMaybeOffloadCachesPolicy: the policy MaybeOffload fetched for one
// call serves the next ones, so an offload costs one request, the put.
func TestMaybeOffloadCachesPolicy(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	if v, err := b.client.MaybeOffload(ctx, "small", []byte("tiny")); err != nil || v.Offloaded() {
		t.Fatalf("small payload: %+v, %v; want it inline", v, err)
	}
	if v, err := b.client.MaybeOffload(ctx, "small", jsonDoc(10<<10)); err != nil || !v.Offloaded() {
		t.Fatalf("large payload: %+v, %v; want a reference", v, err)
	}
	if got := metrictest.Sum(t, b.reg, "claimcheck_http_requests_total"); got != 2 {
		t.Errorf("%v requests for two offloads, want 2 (one policy, one put)", got)
	}
}
