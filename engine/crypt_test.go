package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

// Encryption at rest (crypt.go, ADR 0066), on the real store: SQLite and
// files in a temporary directory.

var (
	testMasterKey  = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	otherMasterKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
)

// encrypted adds encrypted namespaces and the master key to a config.
func encrypted(c *engine.Config) {
	c.MasterKey = testMasterKey
	c.Namespaces["sealed"] = claimcheck.Policy{Encryption: claimcheck.EncryptionAES256GCM, Compression: claimcheck.CompressionNone}
	c.Namespaces["sealedz"] = claimcheck.Policy{Encryption: claimcheck.EncryptionAES256GCM}
	c.Namespaces["sealed2"] = claimcheck.Policy{Encryption: claimcheck.EncryptionAES256GCM}
	c.Sweeper.Disabled = true
}

// objectFiles returns the path of the one object of ns.
func (b *bundle) objectFiles(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	for _, k := range b.objects(t) {
		if strings.HasPrefix(k, ns+string(filepath.Separator)) {
			out = append(out, filepath.Join(b.dir, "blobs", k))
		}
	}
	return out
}

func TestEncryptionRoundTrip(t *testing.T) {
	b := setup(t, encrypted)
	// The first ciphertext segment carries the 40-byte header: its
	// plaintext is 64 KiB - 40 - 16 bytes; later ones 64 KiB - 16.
	const first, later = 65536 - 40 - 16, 65536 - 16
	sizes := []int{0, 1, 100, first - 1, first, first + 1, first + later - 1, first + later, first + later + 1, 1 << 20, 3*later + 17}
	for _, ns := range []string{"sealed", "sealedz"} {
		for _, n := range sizes {
			data := randomBytes(t, n)
			if n > 200 {
				copy(data, "MARKER-PLAINTEXT-MARKER")
			}
			ref := b.put(t, ns, data)
			got, err := b.redeem(t, ref)
			if err != nil {
				t.Fatalf("%s, %d bytes: redeem: %v", ns, n, err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("%s, %d bytes: round trip altered the payload", ns, n)
			}
		}
		for _, f := range b.objectFiles(t, ns) {
			if !strings.Contains(filepath.Base(f), ".dk_") {
				t.Errorf("object %s does not name its data key", f)
			}
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte("MARKER-PLAINTEXT")) {
				t.Errorf("object %s holds plaintext", f)
			}
		}
	}
	// A compressible payload is compressed before it is encrypted.
	doc := jsonDoc(512 << 10)
	ref := b.put(t, "sealedz", doc)
	if ref.StoredSize >= int64(len(doc))/2 {
		t.Errorf("stored %d bytes of a %d-byte JSON document: not compressed before encryption", ref.StoredSize, len(doc))
	}
	if p, err := b.store.Policy(context.Background(), "sealed"); err != nil || !p.Encrypted() {
		t.Errorf("policy of sealed: %+v, %v", p, err)
	}
}

func TestEncryptionTamperedObject(t *testing.T) {
	const seg = 65536
	tamper := map[string]func([]byte) []byte{
		"flipped byte":      func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		"flipped header":    func(b []byte) []byte { b[5] ^= 1; return b },
		"truncated":         func(b []byte) []byte { return b[:2*seg] },
		"last segment lost": func(b []byte) []byte { return b[:len(b)-(len(b)-3*seg)] },
		"appended":          func(b []byte) []byte { return append(b, b[seg:2*seg]...) },
		"segments swapped": func(b []byte) []byte {
			out := append([]byte(nil), b[:seg]...)
			out = append(out, b[2*seg:3*seg]...)
			out = append(out, b[seg:2*seg]...)
			return append(out, b[3*seg:]...)
		},
		"empty": func([]byte) []byte { return nil },
	}
	for name, fn := range tamper {
		t.Run(name, func(t *testing.T) {
			b := setup(t, encrypted)
			data := randomBytes(t, 3*seg+1000)
			ref := b.put(t, "sealed", data)
			files := b.objectFiles(t, "sealed")
			if len(files) != 1 {
				t.Fatalf("objects: %v", files)
			}
			raw, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(files[0], fn(raw), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := b.redeem(t, ref)
			if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
				t.Fatalf("redeem of a tampered object: %d bytes, err %v; want ErrChecksumMismatch", len(got), err)
			}
			if got != nil {
				t.Fatal("bytes handed over from a tampered object")
			}
		})
	}
}

func TestEncryptionObjectMovedUnderAnotherKey(t *testing.T) {
	b := setup(t, encrypted)
	a := b.put(t, "sealed", randomBytes(t, 5000))
	c := b.put(t, "sealed", randomBytes(t, 5000))
	files := b.objectFiles(t, "sealed")
	if len(files) != 2 {
		t.Fatalf("objects: %v", files)
	}
	// Swap the two objects: same data key, but each is bound to its own
	// object key.
	x, _ := os.ReadFile(files[0])
	y, _ := os.ReadFile(files[1])
	if err := os.WriteFile(files[0], y, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[1], x, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []claimcheck.Ref{a, c} {
		if _, err := b.redeem(t, ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("redeem of a swapped object: %v, want ErrChecksumMismatch", err)
		}
	}
}

func TestEncryptionMasterKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(mutate func(*engine.Config)) (*engine.Store, error) {
		cfg := engine.Config{Data: dir, Clock: clock.NewFake(t0), Namespaces: map[string]claimcheck.Policy{}}
		encrypted(&cfg)
		mutate(&cfg)
		return engine.Open(ctx, cfg)
	}

	// Missing: refused at start, naming the setting and the namespace.
	_, err := open(func(c *engine.Config) { c.MasterKey = "" })
	if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "master_key") || !strings.Contains(err.Error(), "CLAIMCHECK_MASTER_KEY") || !strings.Contains(err.Error(), "namespaces.sealed") {
		t.Fatalf("open without a master key: %v", err)
	}
	// Malformed.
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		if _, err := open(func(c *engine.Config) { c.MasterKey = bad }); !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "master_key") {
			t.Fatalf("open with master key %q: %v", bad, err)
		}
	}

	s, err := open(func(*engine.Config) {})
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(t, 70000)
	ref, err := s.Put(ctx, "sealed", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Wrong master key: a clear error, never bytes.
	s, err = open(func(c *engine.Config) { c.MasterKey = otherMasterKey })
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Redeem(ctx, ref)
	if !errors.Is(err, claimcheck.ErrUnavailable) || !strings.Contains(err.Error(), "master") {
		t.Fatalf("redeem with the wrong master key: %v", err)
	}
	s.Close()

	// No encrypted namespace configured any more and no master key: the
	// old objects answer a clear error.
	s, err = open(func(c *engine.Config) {
		c.MasterKey = ""
		c.Namespaces = map[string]claimcheck.Policy{}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Redeem(ctx, ref); !errors.Is(err, claimcheck.ErrUnavailable) || !strings.Contains(err.Error(), "master_key") {
		t.Fatalf("redeem without a master key: %v", err)
	}
	s.Close()

	// The right key again: the bytes come back.
	s, err = open(func(*engine.Config) {})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem with the right key again: %v", err)
	}
}

func TestCryptoShredding(t *testing.T) {
	ctx := context.Background()
	b := setup(t, encrypted)
	data := randomBytes(t, 100000)
	ref := b.put(t, "sealedz", data)
	other := b.put(t, "sealed2", data) // another namespace: untouched

	if err := b.store.DestroyNamespaceKey(ctx, "sealedz"); err != nil {
		t.Fatalf("DestroyNamespaceKey: %v", err)
	}
	_, err := b.redeem(t, ref)
	wantGone(t, err, claimcheck.ReasonKeyDestroyed)
	info, err := b.store.Stat(ctx, ref)
	if err != nil || info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonKeyDestroyed {
		t.Fatalf("stat after shredding: %+v, %v", info, err)
	}
	if got, err := b.redeem(t, other); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the other namespace after shredding: %v", err)
	}
	if err := b.store.DestroyNamespaceKey(ctx, "sealedz"); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Fatalf("second DestroyNamespaceKey: %v, want not found", err)
	}

	// A new put gets a new key and never shares the shredded object.
	again := b.put(t, "sealedz", data)
	if got, err := b.redeem(t, again); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("put after shredding: %v", err)
	}
	b.sweep(t)
	keys := map[string]bool{}
	for _, f := range b.objectFiles(t, "sealedz") {
		keys[filepath.Base(f)[strings.Index(filepath.Base(f), ".")+1:]] = true
	}
	if len(keys) != 2 {
		t.Fatalf("data keys named by the namespace's objects: %v, want the shredded one and a new one", keys)
	}

	// A hold keeps shredding away.
	if err := b.store.SetHold(ctx, again, "case 9"); err != nil {
		t.Fatal(err)
	}
	if err := b.store.DestroyNamespaceKey(ctx, "sealedz"); !errors.Is(err, claimcheck.ErrHeld) {
		t.Fatalf("DestroyNamespaceKey under a claim hold: %v, want ErrHeld", err)
	}
	if err := b.store.ClearHold(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := b.store.SetNamespaceHold(ctx, "sealedz", "audit"); err != nil {
		t.Fatal(err)
	}
	if err := b.store.DestroyNamespaceKey(ctx, "sealedz"); !errors.Is(err, claimcheck.ErrHeld) {
		t.Fatalf("DestroyNamespaceKey under a namespace hold: %v, want ErrHeld", err)
	}
	if got, err := b.redeem(t, again); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem after a refused shred: %v", err)
	}
}

func TestEncryptionDedupStaysInNamespace(t *testing.T) {
	ctx := context.Background()
	b := setup(t, encrypted)
	data := jsonDoc(200 << 10)
	a1 := b.put(t, "sealed", data)
	a2 := b.put(t, "sealed", data)
	c1 := b.put(t, "sealed2", data)
	// Digest-first put: a dedup hit without a body.
	c2, err := b.store.Put(ctx, "sealed2", failingBody{}, claimcheck.PutOptions{Size: int64(len(data)), Digest: claimcheck.DigestOf(data)})
	if err != nil {
		t.Fatalf("digest-first put: %v", err)
	}
	b.sweep(t) // collects the staging objects the dedup hits made redundant
	if n := len(b.objectFiles(t, "sealed")); n != 1 {
		t.Errorf("sealed holds %d objects, want 1 (dedup inside the namespace)", n)
	}
	if n := len(b.objectFiles(t, "sealed2")); n != 1 {
		t.Errorf("sealed2 holds %d objects, want 1 of its own", n)
	}
	for _, ref := range []claimcheck.Ref{a1, a2, c1, c2} {
		if got, err := b.redeem(t, ref); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("redeem %s/%s: %v", ref.Namespace, ref.ID, err)
		}
	}
	// The objects are encrypted under different keys.
	x, _ := os.ReadFile(b.objectFiles(t, "sealed")[0])
	y, _ := os.ReadFile(b.objectFiles(t, "sealed2")[0])
	if bytes.Equal(x, y) {
		t.Fatal("two namespaces stored identical ciphertext")
	}
	// Shredding one namespace leaves the other's copy readable.
	if err := b.store.DestroyNamespaceKey(ctx, "sealed"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.redeem(t, a2); !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("redeem in the shredded namespace: %v", err)
	}
	if got, err := b.redeem(t, c2); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem in the other namespace: %v", err)
	}
}

func TestEncryptionSwitchedOnDoesNotSharePlainObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fc := clock.NewFake(t0)
	open := func(enc string) *engine.Store {
		return enginetest.Open(t, engine.Config{Data: dir, Clock: fc, MasterKey: testMasterKey,
			Namespaces: map[string]claimcheck.Policy{"docs": {Encryption: enc}}})
	}
	data := jsonDoc(100 << 10)
	s := open(claimcheck.EncryptionNone)
	plain, err := s.Put(ctx, "docs", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(claimcheck.EncryptionAES256GCM)
	defer s.Close()
	sealed, err := s.Put(ctx, "docs", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{store: s, dir: dir}
	if _, err := s.SweepOnce(ctx, 0); err != nil {
		t.Fatal(err)
	}
	files := b.objectFiles(t, "docs")
	if len(files) != 2 {
		t.Fatalf("objects after switching encryption on: %v; want the plain one and a new encrypted one", files)
	}
	for _, ref := range []claimcheck.Ref{plain, sealed} {
		p, err := s.Redeem(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("redeem: %v", err)
		}
	}
}

// TestShreddingEndsUploadsInProgress: destroying a namespace's key ends
// its resumable uploads in progress (ADR 0255): the bytes
// they received (in clear) are deleted, their quota is given back, and
// they answer gone with reason key_destroyed, so a completion can never
// seal the pre-shred plaintext under a new key.
func TestShreddingEndsUploadsInProgress(t *testing.T) {
	ctx := context.Background()
	b := setup(t, encrypted)
	data := []byte("salary of employee 4711: 123456, and more bytes to come")
	half := len(data) / 2

	tus, err := b.store.StartResumable(ctx, "sealed", claimcheck.ResumableRequest{Size: int64(len(data)), Digest: claimcheck.DigestOf(data)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.AppendResumable(ctx, tus.ID, 0, bytes.NewReader(data[:half]), claimcheck.ChunkChecksum{}); err != nil {
		t.Fatal(err)
	}
	// Direct uploads are refused in an encrypted namespace (their bytes
	// would be stored in clear): only resumable ones receive bytes there.
	if _, err := b.store.InitUpload(ctx, "sealed", claimcheck.UploadRequest{Size: int64(len(data)), Digest: claimcheck.DigestOf(data)}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Fatalf("direct upload to an encrypted namespace: %v; want invalid argument", err)
	}
	plaintextOnDisk := func() bool {
		for _, f := range b.objects(t) {
			raw, err := os.ReadFile(filepath.Join(b.dir, "blobs", f))
			if err == nil && bytes.Contains(raw, data[:half]) {
				return true
			}
		}
		return false
	}
	if !plaintextOnDisk() {
		t.Fatal("before the shred no object holds the uploads' bytes: the check cannot see them")
	}
	// The namespace has a key once something was sealed in it.
	b.put(t, "sealed", []byte("sealed before the shred"))

	if err := b.store.DestroyNamespaceKey(ctx, "sealed"); err != nil {
		t.Fatal(err)
	}
	if plaintextOnDisk() {
		t.Error("after the shred an object still holds the bytes of an upload in progress")
	}
	if _, err := b.store.AppendResumable(ctx, tus.ID, int64(half), bytes.NewReader(data[half:]), claimcheck.ChunkChecksum{}); !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("completing the resumable upload after the shred: %v; want gone", err)
	}
	_, err = b.store.ResumableUpload(ctx, tus.ID)
	wantGone(t, err, claimcheck.ReasonKeyDestroyed)
	if u := usage(t, b, "sealed"); u.ReservedBytes != 0 || u.PendingClaims != 0 {
		t.Fatalf("usage after the shred: %+v; want no reservation and no pending claim", u)
	}
}
