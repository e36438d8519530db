// Package claimsharness puts the embedded store under the claimstest suite:
// it opens a fresh *engine.Store for each subtest, on SQLite and files or
// on the PostgreSQL and S3 (MinIO) test services, with a fake clock, the
// sweeper driven by hand, and behind an HTTP server on 127.0.0.1 (which
// serves the upload URLs of file storage, and the API a client test talks
// to). It supplies the hooks the contract cannot: corrupting an object,
// listing objects, and restarting with a rotated master key.
package claimsharness

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/claimstest"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/server"
)

// Backend selects where the store keeps its metadata and objects.
type Backend int

const (
	// Files is SQLite and local files in a temporary directory.
	Files Backend = iota
	// Services is PostgreSQL and S3 (MinIO): a fresh schema and a fresh
	// bucket of the services TEST_DATABASE_URL and TEST_S3_URL name. The
	// test skips without them.
	Services
	// ServicesGCS is PostgreSQL and Google Cloud Storage
	// (fake-gcs-server, TEST_GCS_URL): a fresh schema and a fresh bucket.
	ServicesGCS
	// ServicesAzure is PostgreSQL and Azure Blob Storage (Azurite,
	// TEST_AZURE_URL): a fresh schema and a fresh container.
	ServicesAzure
)

// T0 is the fake clock's start: a whole second, as refs carry seconds.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// masterKeys are the master keys of successive rotations.
var masterKeys = func() []string {
	var keys []string
	for i := range 4 {
		keys = append(keys, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{byte(21 + i)}, 32)))
	}
	return keys
}()

// Env is one subtest's store and the server in front of it.
type Env struct {
	// Store is the store under test; RotateMasterKey replaces it.
	Store *engine.Store
	Clock *clock.Fake
	// URL is the HTTP server's, on 127.0.0.1.
	URL string

	cfg      engine.Config
	meta     meta.Store
	blobs    blob.Store
	backend  Backend
	rotation int // index of the current master key

	mu      sync.Mutex
	handler http.Handler
	busy    int // requests being handled
	idle    *sync.Cond
}

// SkipWithoutServices skips the test unless both test services are
// configured, before it opens anything.
func SkipWithoutServices(t *testing.T) {
	t.Helper()
	testsvc.Require(t)
}

// Open opens a fresh store on backend with the namespaces of opts, and
// the server in front of it. Everything is closed when t ends.
func Open(t *testing.T, backend Backend, opts claimstest.Options) *Env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	metadata := "sqlite:" + filepath.Join(dir, "claimcheck.db")
	storage := "file://" + filepath.ToSlash(filepath.Join(dir, "blobs"))
	switch backend {
	case Services:
		metadata, _ = testsvc.Postgres(t)
		storage, _, _ = testsvc.S3(t)
	case ServicesGCS:
		storage = testsvc.GCS(t)
		metadata, _ = testsvc.Postgres(t)
	case ServicesAzure:
		storage = testsvc.Azure(t)
		metadata, _ = testsvc.Postgres(t)
	}
	m, err := sqlmeta.Open(ctx, metadata)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	bs, err := blob.Open(ctx, storage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bs.Close() })

	e := &Env{Clock: clock.NewFake(T0), meta: m, blobs: bs, backend: backend}
	e.idle = sync.NewCond(&e.mu)
	e.cfg = engine.Config{
		Data: dir, Namespaces: opts.Namespaces, Clock: e.Clock,
		Logger:    slog.New(slog.NewTextHandler(t.Output(), nil)),
		MetaStore: m, BlobStore: bs,
		// A master key whether or not a namespace encrypts: the suite
		// asks for encrypted namespaces in some subtests only.
		MasterKey: masterKeys[0],
	}
	// The suite does due work by hand (Sweep), so that what happens
	// never depends on a background goroutine's timing.
	e.cfg.Sweeper.Disabled = true
	e.cfg.Subscriptions.Disabled = true // the suite makes no subscriptions
	e.open(t)
	t.Cleanup(func() {
		e.mu.Lock()
		s := e.Store
		e.mu.Unlock()
		_ = s.Close()
	})
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	return e
}

// open opens the store with e.cfg and points the server at it.
func (e *Env) open(t *testing.T) {
	t.Helper()
	s, err := engine.Open(context.Background(), e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := server.New(server.Config{Claims: s, Ready: s.Ready, Logger: e.cfg.Logger})
	e.mu.Lock()
	e.Store, e.handler = s, h
	e.mu.Unlock()
}

// serve hands a request to the current store's server, counting it so
// that Idle can wait for it.
func (e *Env) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.busy++
	h := e.handler
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.busy--
		if e.busy == 0 {
			e.idle.Broadcast()
		}
		e.mu.Unlock()
	}()
	h.ServeHTTP(w, r)
}

// Idle waits until the server has finished every request: a client can
// have its answer while the handler still cleans up.
func (e *Env) Idle() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.busy > 0 {
		e.idle.Wait()
	}
}

// Sweep does all due work now: finishes due claims, then collects the
// blobs they let go.
func (e *Env) Sweep(t *testing.T) {
	t.Helper()
	e.Idle()
	for range 2 {
		if _, err := e.Store.SweepOnce(context.Background(), 0); err != nil {
			t.Fatalf("SweepOnce: %v", err)
		}
	}
}

// Corrupt flips one byte in the middle of the object of ref's claim.
func (e *Env) Corrupt(t *testing.T, ref claimcheck.Ref) {
	t.Helper()
	ctx := context.Background()
	c, err := e.meta.Claim(ctx, ref.ID)
	if err != nil {
		t.Fatalf("corrupt: claim %s: %v", ref.ID, err)
	}
	b, err := e.meta.Blob(ctx, c.BlobID)
	if err != nil {
		t.Fatalf("corrupt: blob %s: %v", c.BlobID, err)
	}
	r, err := e.blobs.NewReader(ctx, b.Key)
	if err != nil {
		t.Fatalf("corrupt: read %s: %v", b.Key, err)
	}
	stored, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil || len(stored) == 0 {
		t.Fatalf("corrupt: read %s: %d bytes, %v", b.Key, len(stored), err)
	}
	stored[len(stored)/2] ^= 0x01
	w, err := e.blobs.NewWriter(ctx, b.Key)
	if err != nil {
		t.Fatalf("corrupt: write %s: %v", b.Key, err)
	}
	if _, err := w.Write(stored); err != nil {
		t.Fatalf("corrupt: write %s: %v", b.Key, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("corrupt: write %s: %v", b.Key, err)
	}
}

// Objects lists the keys of the objects of namespace ns.
func (e *Env) Objects(t *testing.T, ns string) []string {
	t.Helper()
	var keys []string
	for token := ""; ; {
		objs, next, err := e.blobs.List(context.Background(), ns+"/", token, 0)
		if err != nil {
			t.Fatalf("list objects of %s: %v", ns, err)
		}
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		if next == "" {
			return keys
		}
		token = next
	}
}

// RotateMasterKey restarts the store on the same data with the next
// master key, every earlier one kept as a previous key, as an operator
// redeploys the config to rotate.
func (e *Env) RotateMasterKey(t *testing.T) {
	t.Helper()
	if e.rotation+1 >= len(masterKeys) {
		t.Fatalf("rotate: only %d master keys", len(masterKeys))
	}
	e.Idle()
	_ = e.Store.Close()
	e.rotation++
	e.cfg.MasterKey = masterKeys[e.rotation]
	e.cfg.PreviousMasterKeys = append([]string(nil), masterKeys[:e.rotation]...)
	e.open(t)
}

// Harness is the suite's harness of the embedded store itself; the
// server only serves the upload URLs of file storage.
func (e *Env) Harness() claimstest.Harness {
	return e.hooks(claimstest.Harness{Claims: e.Store,
		UploadURL: func(u claimcheck.Upload) claimcheck.Upload { return server.UploadURL(e.URL, u) }}, func(t *testing.T) claimstest.Harness {
		e.RotateMasterKey(t)
		return e.Harness()
	})
}

// RemoteHarness is the suite's harness of claims (a client of e.URL):
// the store is reached over HTTP only.
func (e *Env) RemoteHarness(claims claimcheck.Claims) claimstest.Harness {
	var h claimstest.Harness
	h = e.hooks(claimstest.Harness{Claims: claims, Idle: e.Idle}, func(t *testing.T) claimstest.Harness {
		e.RotateMasterKey(t)
		return h
	})
	return h
}

func (e *Env) hooks(h claimstest.Harness, rotate func(t *testing.T) claimstest.Harness) claimstest.Harness {
	h.Clock = e.Clock
	h.Corrupt = e.Corrupt
	h.Objects = e.Objects
	h.Sweep = e.Sweep
	h.RotateMasterKey = rotate
	h.UploadsTakeAnyBytes = e.backend == ServicesGCS || e.backend == ServicesAzure
	return h
}
