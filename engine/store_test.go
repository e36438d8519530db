package engine_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
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
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := engine.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &bundle{store: s, clock: fc, dir: dir}
}

// jsonDoc returns a deterministic JSON document of about n bytes.
func jsonDoc(n int) []byte {
	r := mrand.New(mrand.NewPCG(1, 2))
	var buf bytes.Buffer
	buf.WriteString(`{"photos":[`)
	for i := 0; buf.Len() < n; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"id":%d,"album":%d,"title":"photo %d of the %s series","url":"https://img.example/%x.jpg"}`,
			i, r.IntN(100), i, []string{"spring", "summer", "autumn", "winter"}[r.IntN(4)], r.Uint64())
	}
	buf.WriteString(`]}`)
	return buf.Bytes()
}

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
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(path, ".attrs") {
			rel, _ := filepath.Rel(root, path)
			keys = append(keys, rel)
		}
		return nil
	})
	return keys
}

func TestPutRedeemRoundTrip(t *testing.T) {
	b := setup(t)
	doc := jsonDoc(1200 << 10)
	random := randomBytes(t, 5<<20)
	for _, ns := range []string{"default-ns", "plain", "gz", "auto"} {
		for name, data := range map[string][]byte{"empty": {}, "small": []byte("hello"), "json": doc, "random": random} {
			t.Run(ns+"/"+name, func(t *testing.T) {
				ref := b.put(t, ns, data)
				got, err := b.redeem(t, ref)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, data) {
					t.Fatalf("redeemed %d bytes, put %d: content differs", len(got), len(data))
				}
				if ref.Size != int64(len(data)) || ref.Digest != claimcheck.DigestOf(data) || ref.Namespace != ns {
					t.Fatalf("ref does not describe the payload: %+v", ref)
				}
				if !ref.ExpiresAt.Equal(t0.Add(claimcheck.DefaultMaxAge.D())) {
					t.Fatalf("expires_at %v, want created + max_age", ref.ExpiresAt)
				}
				if len(ref.String()) > claimcheck.MaxRefSize {
					t.Fatalf("ref is %d bytes", len(ref.String()))
				}
			})
		}
	}
	t.Run("compression is recorded", func(t *testing.T) {
		for ns, want := range map[string]string{"default-ns": "zstd", "plain": "none", "gz": "gzip"} {
			if ref := b.put(t, ns, doc); ref.Compression != want || (want != "none" && ref.StoredSize >= ref.Size) {
				t.Errorf("%s: compression %s stored %d of %d", ns, ref.Compression, ref.StoredSize, ref.Size)
			}
		}
		// auto keeps random data uncompressed but compresses JSON.
		if ref := b.put(t, "auto", randomBytes(t, 200<<10)); ref.Compression != "none" {
			t.Errorf("auto compressed random data: %s", ref.Compression)
		}
		if ref := b.put(t, "auto", doc); ref.Compression != "zstd" {
			t.Errorf("auto did not compress JSON: %s", ref.Compression)
		}
	})
}

func TestMaybeOffloadAndResolve(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	below := bytes.Repeat([]byte("x"), int(claimcheck.DefaultThreshold)-1)
	at := bytes.Repeat([]byte("y"), int(claimcheck.DefaultThreshold))

	v, err := b.store.MaybeOffload(ctx, "orders", below)
	if err != nil || v.Offloaded() || !bytes.Equal(v.Inline, below) {
		t.Fatalf("below the threshold must stay inline: %+v %v", v.Ref, err)
	}
	v, err = b.store.MaybeOffload(ctx, "orders", at)
	if err != nil || !v.Offloaded() || v.Inline != nil {
		t.Fatalf("at the threshold must offload: %+v %v", v, err)
	}
	got, err := b.store.Resolve(ctx, v)
	if err != nil || !bytes.Equal(got, at) {
		t.Fatalf("resolve: %v", err)
	}
	got, err = b.store.Resolve(ctx, claimcheck.Value{Inline: below})
	if err != nil || !bytes.Equal(got, below) {
		t.Fatalf("resolve inline: %v", err)
	}
	// The namespace threshold applies.
	if v, err := b.store.MaybeOffload(ctx, "small", make([]byte, 1024)); err != nil || !v.Offloaded() {
		t.Fatalf("small namespace threshold 1024: %+v %v", v, err)
	}
}

// assertNothingStored checks that a failed put left no object, no live
// claim and no quota behind.
func (b *bundle) assertNothingStored(t *testing.T) {
	t.Helper()
	if objs := b.objects(t); len(objs) != 0 {
		t.Fatalf("objects left behind: %v", objs)
	}
}

func TestPutRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	t.Run("over max_size", func(t *testing.T) {
		b := setup(t)
		_, err := b.store.Put(ctx, "small", bytes.NewReader(make([]byte, 1<<20+1)), claimcheck.PutOptions{})
		if !errors.Is(err, claimcheck.ErrTooLarge) || !strings.Contains(err.Error(), "max_size") {
			t.Fatalf("got %v, want ErrTooLarge naming max_size", err)
		}
		b.assertNothingStored(t)
	})
	t.Run("declared over max_size", func(t *testing.T) {
		b := setup(t)
		_, err := b.store.Put(ctx, "small", strings.NewReader("x"), claimcheck.PutOptions{Size: 2 << 20})
		if !errors.Is(err, claimcheck.ErrTooLarge) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("truncated body", func(t *testing.T) {
		b := setup(t)
		body := io.MultiReader(bytes.NewReader(make([]byte, 300<<10)), errReader{io.ErrUnexpectedEOF})
		_, err := b.store.Put(ctx, "orders", body, claimcheck.PutOptions{})
		if !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Fatalf("got %v, want ErrInvalidArgument", err)
		}
		b.assertNothingStored(t)
	})
	t.Run("shorter than declared", func(t *testing.T) {
		b := setup(t)
		_, err := b.store.Put(ctx, "orders", strings.NewReader("abc"), claimcheck.PutOptions{Size: 10})
		if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "declared") {
			t.Fatalf("got %v", err)
		}
		b.assertNothingStored(t)
	})
	t.Run("wrong digest", func(t *testing.T) {
		b := setup(t)
		_, err := b.store.Put(ctx, "orders", strings.NewReader("abc"), claimcheck.PutOptions{Digest: claimcheck.DigestOf([]byte("abd"))})
		if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("got %v", err)
		}
		b.assertNothingStored(t)
	})
	t.Run("malformed options", func(t *testing.T) {
		b := setup(t)
		for _, opts := range []claimcheck.PutOptions{
			{Digest: "md5:abc"},
			{Consumers: -1},
			{ConsumerNames: []string{"a", "a"}},
			{Consumers: 3, ConsumerNames: []string{"a"}},
			{Labels: map[string]string{"": "x"}},
		} {
			if _, err := b.store.Put(ctx, "orders", strings.NewReader("abc"), opts); !errors.Is(err, claimcheck.ErrInvalidArgument) {
				t.Errorf("%+v: got %v", opts, err)
			}
		}
	})
	t.Run("bad namespace", func(t *testing.T) {
		b := setup(t)
		if _, err := b.store.Put(ctx, "../etc", strings.NewReader("abc"), claimcheck.PutOptions{}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unknown namespace with defaults off", func(t *testing.T) {
		b := setup(t, func(c *engine.Config) { c.Defaults.Disabled = true })
		_, err := b.store.Put(ctx, "elsewhere", strings.NewReader("abc"), claimcheck.PutOptions{})
		if !errors.Is(err, claimcheck.ErrNotFound) || !strings.Contains(err.Error(), "elsewhere") {
			t.Fatalf("got %v", err)
		}
		b.put(t, "plain", []byte("configured namespaces still work"))
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestRedeemDetectsCorruption(t *testing.T) {
	for _, ns := range []string{"plain", "default-ns", "gz"} {
		t.Run(ns, func(t *testing.T) {
			b := setup(t)
			data := jsonDoc(300 << 10)
			ref := b.put(t, ns, data)
			objs := b.objects(t)
			if len(objs) != 1 {
				t.Fatalf("want one object, have %v", objs)
			}
			path := filepath.Join(b.dir, "blobs", objs[0])
			stored, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			stored[len(stored)/2] ^= 0x01
			if err := os.WriteFile(path, stored, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := b.redeem(t, ref)
			if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
				t.Fatalf("redeem of a corrupted object: got %d bytes and %v, want ErrChecksumMismatch", len(got), err)
			}
			if got != nil {
				t.Fatal("corrupt bytes were handed over")
			}
		})
	}
}

func TestLookupErrors(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	ref := b.put(t, "orders", []byte("payload"))

	if _, err := b.store.Redeem(ctx, claimcheck.Ref{ID: "nonsense"}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("malformed id: %v", err)
	}
	unknown := ref
	unknown.ID = "cc_AAAAAAAAAAAAAAAAAAAAAA"
	if _, err := b.store.Redeem(ctx, unknown); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	other := ref
	other.Namespace = "other"
	if _, err := b.store.Stat(ctx, other); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("wrong namespace must look like not found: %v", err)
	}
	// A bare id (no namespace) is enough to redeem.
	if got, err := b.redeem(t, claimcheck.Ref{ID: ref.ID}); err != nil || string(got) != "payload" {
		t.Errorf("redeem by id: %q %v", got, err)
	}
}

func TestExpiredAfterMaxAge(t *testing.T) {
	b := setup(t)
	ref := b.put(t, "short", []byte("brief"))
	b.clock.Advance(59 * time.Minute)
	if _, err := b.redeem(t, ref); err != nil {
		t.Fatalf("before max_age: %v", err)
	}
	b.clock.Advance(time.Minute)
	_, err := b.redeem(t, ref)
	var gone *claimcheck.GoneError
	if !errors.Is(err, claimcheck.ErrExpired) || !errors.As(err, &gone) || gone.Reason != claimcheck.ReasonExpired {
		t.Fatalf("at max_age: got %v, want expired", err)
	}
	info, err := b.store.Stat(context.Background(), ref)
	if err != nil || info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonExpired {
		t.Fatalf("stat after expiry: %+v %v", info, err)
	}
}

func TestStatReleaseDelete(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	ref, err := b.store.Put(ctx, "orders", strings.NewReader(`{"a":1}`), claimcheck.PutOptions{
		ContentType: "application/json", Labels: map[string]string{"workflow": "wf-1"}, Consumers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.redeem(t, ref); err != nil {
		t.Fatal(err)
	}
	info, err := b.store.Stat(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != claimcheck.StateActive || info.Reads != 1 || !info.FirstReadAt.Equal(t0) ||
		info.ContentType != "application/json" || info.Labels["workflow"] != "wf-1" || info.Consumers != 2 ||
		info.Ref.Digest != ref.Digest || !info.DeleteAt.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("stat: %+v", info)
	}
	for _, c := range []string{"a", "a", "b"} {
		if err := b.store.Release(ctx, ref, c); err != nil {
			t.Fatalf("release %s: %v", c, err)
		}
	}
	info, _ = b.store.Stat(ctx, ref)
	if info.Releases != 2 || !info.DeleteAt.Equal(t0.Add(claimcheck.DefaultRetentionAfterRead.D())) {
		t.Fatalf("after two distinct releases: %+v", info)
	}
	if err := b.store.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Delete(ctx, ref); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	_, err = b.redeem(t, ref)
	var gone *claimcheck.GoneError
	if !errors.As(err, &gone) || gone.Reason != claimcheck.ReasonDeleted || errors.Is(err, claimcheck.ErrExpired) {
		t.Fatalf("redeem after delete: %v", err)
	}
}

func TestPolicyOfNamespaces(t *testing.T) {
	b := setup(t)
	p, err := b.store.Policy(context.Background(), "small")
	if err != nil || p.Threshold != 1024 || p.MaxSize != 1<<20 || p.TTL.MaxAge != claimcheck.DefaultMaxAge {
		t.Fatalf("small: %+v %v", p, err)
	}
	raw, _ := json.Marshal(p)
	if !strings.Contains(string(raw), `"max_age":"24h0m0s"`) {
		t.Fatalf("policy JSON: %s", raw)
	}
}

// The blob layer is used through its interface only; make sure the
// store's default storage honours it.
var _ blob.Store = (*blob.Bucket)(nil)
