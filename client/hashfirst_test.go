package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// hashFirstSetup serves a store with a namespace without dedup
// ("nodedup") and one with it ("dedup") behind a handler that records
// the digest header of each put and, while flip is set, alters one byte
// of a put's body on its way to the server (a broken middlebox).
type hashFirstSetup struct {
	store   *engine.Store
	c       *client.Client
	flip    atomic.Bool
	mu      sync.Mutex
	digests []string // Claimcheck-Digest of each put, "" when absent
	expects []string // Expect of each put
}

func newHashFirstSetup(t *testing.T) *hashFirstSetup {
	t.Helper()
	off := false
	s := enginetest.Open(t, engine.Config{Namespaces: map[string]claimcheck.Policy{
		"nodedup": {Compression: claimcheck.CompressionNone, Dedup: &off},
		"dedup":   {Compression: claimcheck.CompressionNone},
	}})
	h := &hashFirstSetup{store: s}
	srv := server.New(server.Config{Claims: s, Ready: s.Ready})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			h.mu.Lock()
			h.digests = append(h.digests, r.Header.Get(api.HeaderDigest))
			h.expects = append(h.expects, r.Header.Get("Expect"))
			h.mu.Unlock()
			if h.flip.Load() {
				r.Body = &flipper{ReadCloser: r.Body}
			}
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

func (h *hashFirstSetup) sentDigests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.digests...)
}

// flipper alters the first byte it passes.
type flipper struct {
	io.ReadCloser
	done bool
}

func (f *flipper) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if n > 0 && !f.done {
		p[0] ^= 1
		f.done = true
	}
	return n, err
}

// Once a put's answer says the namespace never answers before the body,
// the client stops hashing in-memory payloads before it sends them
// there, and sends them without waiting for 100 Continue; a namespace
// with dedup keeps getting the digest first, and every put of a large
// payload still waits (a refusal must not cost the whole body).
func TestPutSkipsHashFirstWhereDigestFirstIsOff(t *testing.T) {
	h := newHashFirstSetup(t)
	ctx := context.Background()
	data := randomBytes(t, 300<<10)
	for _, ns := range []string{"nodedup", "nodedup", "nodedup", "dedup", "dedup"} {
		data[0]++ // fresh bytes each time
		ref, err := h.c.Put(ctx, ns, bytes.NewReader(data), claimcheck.PutOptions{})
		if err != nil {
			t.Fatalf("put to %s: %v", ns, err)
		}
		if ref.Digest != claimcheck.DigestOf(data) || ref.Size != int64(len(data)) {
			t.Fatalf("put to %s: ref %+v does not describe the payload", ns, ref)
		}
	}
	big := randomBytes(t, 5<<20)
	if _, err := h.c.Put(ctx, "nodedup", bytes.NewReader(big), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	got := h.sentDigests()
	h.mu.Lock()
	expects := h.expects
	h.mu.Unlock()
	for i, want := range []bool{true, false, false, true, true, false} {
		if (got[i] != "") != want {
			t.Errorf("put %d: digest sent %q, want sent = %v", i, got[i], want)
		}
		if wantExpect := want || i == 5; (expects[i] != "") != wantExpect {
			t.Errorf("put %d: Expect %q, want sent = %v", i, expects[i], wantExpect)
		}
	}
}

// A put that was not hashed first is still verified end to end: bytes
// altered on the way are stored as the server got them, the client finds
// that the stored digest is not the one of the bytes it sent, fails the
// put with ErrChecksumMismatch and deletes the claim.
func TestPutWithoutHashFirstVerifiesTheStoredDigest(t *testing.T) {
	h := newHashFirstSetup(t)
	ctx := context.Background()
	data := randomBytes(t, 200<<10)
	if _, err := h.c.Put(ctx, "nodedup", bytes.NewReader(data), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err) // learns that digest-first is off
	}
	h.flip.Store(true)
	data[0]++
	_, err := h.c.Put(ctx, "nodedup", bytes.NewReader(data), claimcheck.PutOptions{})
	if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("put altered on the way: %v, want ErrChecksumMismatch", err)
	}
	if d := h.sentDigests(); d[len(d)-1] != "" {
		t.Fatalf("the altered put was sent with its digest first; this test wants the path without")
	}
	info, err := h.store.Namespace(ctx, "nodedup")
	if err != nil {
		t.Fatal(err)
	}
	if info.Usage.ActiveClaims != 1 {
		t.Fatalf("%d active claims, want only the first put's: the altered one must be deleted", info.Usage.ActiveClaims)
	}
}
