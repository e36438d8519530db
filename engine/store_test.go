package engine_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
	"github.com/claimcheck/claimcheck/claimstest"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle struct {
	store *engine.Store
	clock *clock.Fake
	dir   string
}

// setup opens an embedded store on the default backends (SQLite and
// files) in a temporary directory, with a fake clock.
func setup(t *testing.T, mutate ...func(*engine.Config)) *bundle {
	t.Helper()
	dir := t.TempDir()
	fc := clock.NewFake(t0)
	cfg := engine.Config{
		Data:  dir,
		Clock: fc,
		Namespaces: map[string]claimcheck.Policy{
			"plain":   {Compression: claimcheck.CompressionNone},
			"gz":      {Compression: claimcheck.CompressionGzip},
			"auto":    {Compression: claimcheck.CompressionAuto},
			"small":   {MaxSize: 1 << 20, Threshold: 1024},
			"short":   {TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(time.Hour)}},
			"nodedup": {Dedup: new(bool)},
		},
	}
	// No delivery to subscriptions unless a test asks: its background
	// reads would show in the tests that count metadata operations.
	cfg.Subscriptions.Disabled = true
	for _, m := range mutate {
		m(&cfg)
	}
	s := enginetest.Open(t, cfg)
	return &bundle{store: s, clock: fc, dir: dir}
}

// jsonDoc returns a deterministic JSON document of about n bytes.
func jsonDoc(n int) []byte { return claimstest.JSONDoc(n, 1) }

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bundle) put(t *testing.T, ns string, data []byte) claimcheck.Ref {
	t.Helper()
	ref, err := b.store.Put(context.Background(), ns, bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatalf("put %d bytes to %s: %v", len(data), ns, err)
	}
	return ref
}

func (b *bundle) redeem(t *testing.T, ref claimcheck.Ref) ([]byte, error) {
	t.Helper()
	p, err := b.store.Redeem(context.Background(), ref)
	if err != nil {
		return nil, err
	}
	return p.Bytes()
}

// objects lists every object in the store's blob directory.
func (b *bundle) objects(t *testing.T) []string {
	t.Helper()
	var keys []string
	root := filepath.Join(b.dir, "blobs")
	if err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !blob.IsOwnerMarker(d.Name()) && !strings.HasSuffix(path, ".attrs") {
			rel, _ := filepath.Rel(root, path)
			keys = append(keys, rel)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// assertNothingStored checks that a failed put left no object, no live
// claim and no quota behind.
func (b *bundle) assertNothingStored(t *testing.T) {
	t.Helper()
	if objs := b.objects(t); len(objs) != 0 {
		t.Fatalf("objects left behind: %v", objs)
	}
}

// TestPutRefusesBadInput: what a put refuses that only the embedded
// store decides (the conformance suite, TestConformance, checks the
// contract's refusals on every implementation): a body whose reader fails
// is the caller's invalid argument, and with defaults off a namespace the
// config does not name is not found.
func TestPutRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	t.Run("truncated body", func(t *testing.T) {
		b := setup(t)
		body := io.MultiReader(bytes.NewReader(make([]byte, 300<<10)), errReader{io.ErrUnexpectedEOF})
		_, err := b.store.Put(ctx, "orders", body, claimcheck.PutOptions{})
		if !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Fatalf("got %v, want ErrInvalidArgument", err)
		}
		b.assertNothingStored(t)
	})
	t.Run("unknown namespace with defaults off", func(t *testing.T) {
		b := setup(t, func(c *engine.Config) { c.Defaults.Disabled = true })
		_, err := b.store.Put(ctx, "elsewhere", strings.NewReader("abc"), claimcheck.PutOptions{})
		if !errors.Is(err, claimcheck.ErrNotFound) || !strings.Contains(err.Error(), "elsewhere") {
			t.Fatalf("got %v", err)
		}
		if _, err := b.store.Policy(ctx, "elsewhere"); !errors.Is(err, claimcheck.ErrNotFound) {
			t.Fatalf("policy of an unknown namespace with defaults off: %v", err)
		}
		b.put(t, "plain", []byte("configured namespaces still work"))
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// The blob layer is used through its interface only; make sure the
// store's default storage honours it.
var _ blob.Store = (*gocloudbucket.Bucket)(nil)
