// Package blobtest is the conformance suite for blob.Store. Every
// implementation (each backend of blob.Open, and every wrapper) runs it, so
// the engine can rely on the contract in blob.Store's doc comments instead
// of on a particular backend.
//
// The suite writes under a fresh random prefix per subtest and deletes what
// it wrote, so a shared backend (one S3 bucket for every run) never needs
// emptying and concurrent runs, and the subtests of one run, which run in
// parallel, do not see each other.
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
)

// Run runs the suite, its subtests in parallel. open is called once per
// subtest, by several subtests at once, and must return a usable store;
// Run closes it when the subtest ends. Stores returned by different calls
// may share their objects (the same bucket) or not.
func Run(t *testing.T, open func(t *testing.T) blob.Store) {
	t.Helper()
	RunWith(t, open, Options{})
}

// Options adapt the suite to what a service does not check. Each is
// empty, or names the missing check and why the engine is safe without
// it; the subtests that need the check then skip, saying so.
type Options struct {
	// PresignLengthUnchecked: the service stores a body of another length
	// than a presigned URL was signed for.
	PresignLengthUnchecked string
	// PresignSumUnchecked: the service stores other bytes than the
	// sha256 a presigned URL was signed for.
	PresignSumUnchecked string
	// KeyPrefix leads every key the suite writes (default "blobtest/"),
	// for a store that treats keys of some form differently: the
	// engine's store routes <namespace>/inline/... to database rows.
	KeyPrefix string
	// MaxObjectSize, when set, is the largest object the store holds;
	// RoundTrip writes none larger (inline rows hold small payloads only).
	MaxObjectSize int
}

// RunWith is Run for a service that lacks a check opts names.
func RunWith(t *testing.T, open func(t *testing.T) blob.Store, opts Options) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"RoundTrip", testRoundTrip},
		{"NotFound", testNotFound},
		{"Delete", testDelete},
		{"CancelledWrite", testCancelledWrite},
		{"Overwrite", testOverwrite},
		{"List", testList},
		{"NestedKeys", testNestedKeys},
		{"PartialRead", testPartialRead},
		{"RangeRead", testRangeRead},
		{"Concurrent", testConcurrent},
		{"PresignPut", testPresignPut},
		{"Append", testAppend},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, open, opts)
			tc.fn(t, h)
		})
	}
}

// harness is one subtest's store and key prefix.
type harness struct {
	store  blob.Store
	prefix string
	opts   Options

	mu      sync.Mutex
	written []string
}

func setup(t *testing.T, open func(t *testing.T) blob.Store, opts Options) *harness {
	t.Helper()
	store := open(t)
	var r [6]byte
	_, _ = rand.Read(r[:])
	lead := opts.KeyPrefix
	if lead == "" {
		lead = "blobtest/"
	}
	h := &harness{store: store, prefix: lead + hex.EncodeToString(r[:]) + "/", opts: opts}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	// Registered after Close, so it runs before it.
	t.Cleanup(func() {
		ctx := context.Background()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, k := range h.written {
			if err := store.Delete(ctx, k); err != nil {
				t.Errorf("cleanup: Delete(%q): %v", k, err)
			}
		}
	})
	return h
}

// key returns name under the subtest's prefix.
func (h *harness) key(name string) string { return h.prefix + name }

// put writes data in uneven chunks (so stores see partial writes) and
// fails the test on any error.
func (h *harness) put(t *testing.T, key string, data []byte) {
	t.Helper()
	h.track(key)
	w, err := h.store.NewWriter(t.Context(), key)
	if err != nil {
		t.Fatalf("NewWriter(%q): %v", key, err)
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 100_003)
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatalf("Write(%q): %v", key, err)
		}
		rest = rest[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close writer of %q: %v", key, err)
	}
}

func (h *harness) track(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.written, key) {
		h.written = append(h.written, key)
	}
}

func (h *harness) get(t *testing.T, key string) []byte {
	t.Helper()
	r, err := h.store.NewReader(t.Context(), key)
	if err != nil {
		t.Fatalf("NewReader(%q): %v", key, err)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close reader of %q: %v", key, err)
	}
	return data
}

// listAll lists every object under prefix, page by page.
func (h *harness) listAll(t *testing.T, prefix string, pageSize int) []blob.Object {
	t.Helper()
	var all []blob.Object
	token := ""
	for range 10_000 {
		page, next, err := h.store.List(t.Context(), prefix, token, pageSize)
		if err != nil {
			t.Fatalf("List(%q, %q, %d): %v", prefix, token, pageSize, err)
		}
		if pageSize > 0 && len(page) > pageSize {
			t.Fatalf("List(%q, %q, %d) returned %d objects", prefix, token, pageSize, len(page))
		}
		all = append(all, page...)
		if next == "" {
			return all
		}
		if next <= token {
			t.Fatalf("List(%q, %q, %d): next token %q does not move forward", prefix, token, pageSize, next)
		}
		token = next
	}
	t.Fatalf("List(%q) did not finish", prefix)
	return nil
}

func (h *harness) wantNotFound(t *testing.T, key string) {
	t.Helper()
	if _, err := h.store.Attributes(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Attributes(%q) = %v, want ErrNotFound", key, err)
	}
	r, err := h.store.NewReader(t.Context(), key)
	if err == nil {
		_ = r.Close()
	}
	if !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("NewReader(%q) = %v, want ErrNotFound", key, err)
	}
}

func keys(objs []blob.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key
	}
	return out
}

// payload returns n deterministic pseudo-random (incompressible) bytes.
func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	_, _ = mrand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

func testRoundTrip(t *testing.T, h *harness) {
	// 6 MiB outgrows the buffer of a single-request S3 write, whose
	// bytes then move on to a multipart writer.
	for _, n := range []int{0, 1, 1000, 3 << 20, 6 << 20} {
		if h.opts.MaxObjectSize > 0 && n > h.opts.MaxObjectSize {
			continue
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			key := h.key(fmt.Sprintf("obj-%d", n))
			want := payload(n, byte(n))
			h.put(t, key, want)
			if got := h.get(t, key); !bytes.Equal(got, want) {
				t.Fatalf("read back %d bytes, want the %d written", len(got), len(want))
			}
			a, err := h.store.Attributes(t.Context(), key)
			if err != nil {
				t.Fatalf("Attributes: %v", err)
			}
			if a.Size != int64(n) {
				t.Errorf("Attributes.Size = %d, want %d", a.Size, n)
			}
			if a.ModTime.IsZero() {
				t.Error("Attributes.ModTime is zero")
			}
		})
	}
}

func testNotFound(t *testing.T, h *harness) {
	h.wantNotFound(t, h.key("never-written"))
	h.wantNotFound(t, h.key("never/written/nested"))
}

func testDelete(t *testing.T, h *harness) {
	key := h.key("doomed")
	h.put(t, key, []byte("short-lived"))
	if err := h.store.Delete(t.Context(), key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	h.wantNotFound(t, key)
	if got := keys(h.listAll(t, h.prefix, 0)); len(got) != 0 {
		t.Errorf("List after Delete = %q, want nothing", got)
	}
	if err := h.store.Delete(t.Context(), key); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
	if err := h.store.Delete(t.Context(), h.key("never-written")); err != nil {
		t.Errorf("Delete of a missing key = %v, want nil", err)
	}
}

func testCancelledWrite(t *testing.T, h *harness) {
	// 17 MiB passes S3's single-PUT threshold, so the multipart path is
	// cancelled too.
	for _, n := range []int{0, 1000, 17 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			key := h.key(fmt.Sprintf("cancelled-%d", n))
			h.track(key)
			ctx, cancel := context.WithCancel(t.Context())
			w, err := h.store.NewWriter(ctx, key)
			if err != nil {
				t.Fatalf("NewWriter: %v", err)
			}
			_, _ = w.Write(payload(n, 1)) // may fail once the store notices
			cancel()
			if err := w.Close(); err == nil {
				t.Error("Close after cancel = nil, want an error")
			}
			h.wantNotFound(t, key)
			if got := keys(h.listAll(t, h.prefix, 0)); len(got) != 0 {
				t.Errorf("List after a cancelled write = %q, want nothing", got)
			}
		})
	}
	t.Run("CancelledBeforeNewWriter", func(t *testing.T) {
		key := h.key("cancelled-early")
		h.track(key)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		w, err := h.store.NewWriter(ctx, key)
		if err == nil {
			_, _ = w.Write([]byte("never visible"))
			if err := w.Close(); err == nil {
				t.Error("Close with a cancelled ctx = nil, want an error")
			}
		}
		h.wantNotFound(t, key)
	})
	t.Run("KeepsPreviousVersion", func(t *testing.T) {
		key := h.key("cancelled-overwrite")
		h.put(t, key, []byte("committed"))
		ctx, cancel := context.WithCancel(t.Context())
		w, err := h.store.NewWriter(ctx, key)
		if err != nil {
			t.Fatalf("NewWriter: %v", err)
		}
		_, _ = w.Write([]byte("abandoned and longer"))
		cancel()
		_ = w.Close()
		if got := h.get(t, key); string(got) != "committed" {
			t.Errorf("after a cancelled overwrite read %q, want %q", got, "committed")
		}
	})
}

func testOverwrite(t *testing.T, h *harness) {
	key := h.key("twice")
	h.put(t, key, []byte("first version"))
	h.put(t, key, []byte("second"))
	if got := h.get(t, key); string(got) != "second" {
		t.Errorf("read %q, want %q", got, "second")
	}
	a, err := h.store.Attributes(t.Context(), key)
	if err != nil {
		t.Fatalf("Attributes: %v", err)
	}
	if a.Size != 6 {
		t.Errorf("Attributes.Size = %d, want 6", a.Size)
	}
}

func testList(t *testing.T, h *harness) {
	// Written out of order; "bb" checks that prefix "b/" is a string
	// prefix, not a directory match that also catches "bb".
	names := []string{"d", "b/2", "a", "bb", "b/3/x", "c", "b/1"}
	for i, n := range names {
		h.put(t, h.key(n), payload(i+1, byte(i)))
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	want := func(ns ...string) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = h.key(n)
		}
		return out
	}

	t.Run("All", func(t *testing.T) {
		objs := h.listAll(t, h.prefix, 1000)
		if got := keys(objs); !slices.Equal(got, want(sorted...)) {
			t.Fatalf("List = %q, want %q", got, want(sorted...))
		}
		for _, o := range objs {
			i := slices.Index(names, o.Key[len(h.prefix):])
			if o.Size != int64(i+1) {
				t.Errorf("%s: Size = %d, want %d", o.Key, o.Size, i+1)
			}
			if o.ModTime.IsZero() {
				t.Errorf("%s: ModTime is zero", o.Key)
			}
		}
	})
	t.Run("DefaultPageSize", func(t *testing.T) {
		if got := keys(h.listAll(t, h.prefix, 0)); !slices.Equal(got, want(sorted...)) {
			t.Errorf("List with pageSize 0 = %q, want %q", got, want(sorted...))
		}
	})
	t.Run("Pages", func(t *testing.T) {
		for _, size := range []int{1, 2, 3, len(names), len(names) + 1} {
			if got := keys(h.listAll(t, h.prefix, size)); !slices.Equal(got, want(sorted...)) {
				t.Errorf("pages of %d = %q, want %q", size, got, want(sorted...))
			}
		}
	})
	t.Run("Prefix", func(t *testing.T) {
		if got := keys(h.listAll(t, h.key("b/"), 2)); !slices.Equal(got, want("b/1", "b/2", "b/3/x")) {
			t.Errorf("List(b/) = %q", got)
		}
		if got := keys(h.listAll(t, h.key("b"), 2)); !slices.Equal(got, want("b/1", "b/2", "b/3/x", "bb")) {
			t.Errorf("List(b) = %q", got)
		}
		if got := keys(h.listAll(t, h.key("nothing-here/"), 2)); len(got) != 0 {
			t.Errorf("List(nothing-here/) = %q, want nothing", got)
		}
	})
	t.Run("Token", func(t *testing.T) {
		for _, tc := range []struct {
			token string
			want  []string
		}{
			{h.key("b/2"), want("b/3/x", "bb", "c", "d")},   // an existing key
			{h.key("b/25"), want("b/3/x", "bb", "c", "d")},  // between keys
			{h.key("a"), want("b/1", "b/2", "b/3/x", "bb")}, // first key
			{h.key("d"), nil},   // last key
			{h.key("zzz"), nil}, // past the end
		} {
			page, next, err := h.store.List(t.Context(), h.prefix, tc.token, 4)
			if err != nil {
				t.Fatalf("List after %q: %v", tc.token, err)
			}
			if got := keys(page); !slices.Equal(got, tc.want) {
				t.Errorf("List after %q = %q, want %q", tc.token, got, tc.want)
			}
			if len(tc.want) == 0 && next != "" {
				t.Errorf("List after %q: next token %q, want \"\"", tc.token, next)
			}
		}
	})
}

func testNestedKeys(t *testing.T, h *harness) {
	deep := h.key("x/y/z/w/obj.bin")
	sibling := h.key("x/y/other")
	h.put(t, deep, []byte("deep"))
	h.put(t, sibling, []byte("sibling"))
	if got := h.get(t, deep); string(got) != "deep" {
		t.Errorf("read %q, want %q", got, "deep")
	}
	if got := keys(h.listAll(t, h.key("x/y/"), 10)); !slices.Equal(got, []string{sibling, deep}) {
		t.Errorf("List(x/y/) = %q, want %q", got, []string{sibling, deep})
	}
	if got := keys(h.listAll(t, h.key("x/y/z/"), 10)); !slices.Equal(got, []string{deep}) {
		t.Errorf("List(x/y/z/) = %q, want %q", got, []string{deep})
	}
	for _, k := range []string{deep, sibling} {
		if err := h.store.Delete(t.Context(), k); err != nil {
			t.Fatalf("Delete(%q): %v", k, err)
		}
	}
	if got := keys(h.listAll(t, h.key("x/"), 10)); len(got) != 0 {
		t.Errorf("List after deleting everything = %q", got)
	}
}

func testPartialRead(t *testing.T, h *harness) {
	key := h.key("partial")
	h.put(t, key, payload(256<<10, 7))
	r, err := h.store.NewReader(t.Context(), key)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close before EOF: %v", err)
	}
}

// testRangeRead: NewRangeReader gives exactly the bytes asked for, fewer
// past the end and none for a range that starts past it (never an error:
// the engine checks the count itself, and an object shorter than
// recorded is damage, not an outage), and ErrNotFound for a missing
// object.
func testRangeRead(t *testing.T, h *harness) {
	key := h.key("ranged")
	data := payload(300<<10, 9)
	h.put(t, key, data)
	for _, c := range []struct{ off, n, start, end int64 }{
		{0, 1, 0, 1},
		{1000, 70000, 1000, 71000},
		{int64(len(data)) - 10, -1, int64(len(data)) - 10, int64(len(data))},
		{int64(len(data)) - 10, 100, int64(len(data)) - 10, int64(len(data))},
		{0, -1, 0, int64(len(data))},
		{int64(len(data)), 10, int64(len(data)), int64(len(data))},
		{int64(len(data)) + 65536, 100, int64(len(data)), int64(len(data))},
		{int64(len(data)) + 1, -1, int64(len(data)), int64(len(data))},
	} {
		r, err := h.store.NewRangeReader(t.Context(), key, c.off, c.n)
		if err != nil {
			t.Fatalf("NewRangeReader(%d, %d): %v", c.off, c.n, err)
		}
		got, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil || !bytes.Equal(got, data[c.start:c.end]) {
			t.Fatalf("NewRangeReader(%d, %d): %d bytes, %v; want bytes %d-%d", c.off, c.n, len(got), err, c.start, c.end)
		}
	}
	if _, err := h.store.NewRangeReader(t.Context(), h.key("never-written"), 0, 10); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("NewRangeReader of a missing object: %v, want ErrNotFound", err)
	}
}

func testConcurrent(t *testing.T, h *harness) {
	var wg sync.WaitGroup
	for i := range 8 {
		key := h.key(fmt.Sprintf("c/%d", i))
		h.track(key)
		wg.Go(func() {
			want := payload(64<<10+i, byte(i))
			w, err := h.store.NewWriter(t.Context(), key)
			if err != nil {
				t.Errorf("NewWriter(%q): %v", key, err)
				return
			}
			if _, err := w.Write(want); err != nil {
				t.Errorf("Write(%q): %v", key, err)
			}
			if err := w.Close(); err != nil {
				t.Errorf("Close(%q): %v", key, err)
				return
			}
			r, err := h.store.NewReader(t.Context(), key)
			if err != nil {
				t.Errorf("NewReader(%q): %v", key, err)
				return
			}
			defer func() { _ = r.Close() }()
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("read %q: %d bytes, err %v; want %d bytes", key, len(got), err, len(want))
			}
		})
	}
	wg.Wait()
	if got := h.listAll(t, h.key("c/"), 3); len(got) != 8 {
		t.Errorf("List(c/) = %d objects, want 8", len(got))
	}
}
