package engine_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
)

// inlineNamespaces adds namespaces that keep payloads of up to 4 KiB in
// the metadata database: plain, compressed and encrypted.
func inlineNamespaces(c *engine.Config) {
	c.MasterKey = testMasterKey
	c.Namespaces["inl"] = claimcheck.Policy{InlineBelow: 4 << 10, Compression: claimcheck.CompressionNone}
	c.Namespaces["inlz"] = claimcheck.Policy{InlineBelow: 4 << 10}
	c.Namespaces["inlsealed"] = claimcheck.Policy{InlineBelow: 4 << 10, Encryption: claimcheck.EncryptionAES256GCM}
	c.Sweeper.Disabled = true
}

// streamOf hides the length of data, as a body read from a socket does.
func streamOf(data []byte) io.Reader { return io.MultiReader(bytes.NewReader(data)) }

// TestInlineObjects (ADR 0292): a put within inline_below keeps its
// bytes in the metadata database (no object in the bucket), redeems them
// whole and verified, compressed and encrypted as objects are; a larger
// put, or one whose size is not known beforehand, is an object.
func TestInlineObjects(t *testing.T) {
	b := setup(t, inlineNamespaces)
	ctx := t.Context()
	small, large := randomBytes(t, 3000), randomBytes(t, 5000)
	for _, ns := range []string{"inl", "inlz", "inlsealed"} {
		for _, data := range [][]byte{small, jsonDoc(3 << 10)} {
			ref := b.put(t, ns, data)
			if got, err := b.redeem(t, ref); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: redeem of an inline payload: %d bytes, %v", ns, len(got), err)
			}
			if info, err := b.store.Stat(ctx, ref); err != nil || info.Object != "" {
				t.Fatalf("%s: stat names object %q (%v); an inline payload has none in the bucket", ns, info.Object, err)
			}
		}
		if objs := b.objectFiles(t, ns); len(objs) != 0 {
			t.Fatalf("%s: objects in the bucket for inline payloads: %v", ns, objs)
		}
		rows, err := b.store.InlineObjects(ctx, ns+"/")
		if err != nil || len(rows) != 2 {
			t.Fatalf("%s: inline objects %+v, %v; want 2", ns, rows, err)
		}
		b.put(t, ns, large)
		if _, err := b.store.Put(ctx, ns, streamOf(randomBytes(t, 100)), claimcheck.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if objs := b.objectFiles(t, ns); len(objs) != 2 {
			t.Fatalf("%s: objects %v; want the one past inline_below and the one of unknown size", ns, objs)
		}
	}
	// A sealed inline object's row holds ciphertext, not the payload.
	rows, err := b.store.InlineObjects(ctx, "inlsealed/")
	if err != nil || len(rows) != 2 || !strings.Contains(rows[0].Key, ".dk_") {
		t.Fatalf("sealed inline objects: %+v, %v; want keys naming their data key", rows, err)
	}
}

// TestInlineObjectsDedupAndCollect: the same bytes put inline and as an
// object share one blob whichever came first; the staging copy a dedup
// hit made unneeded is deleted; once every claim is gone the sweeper
// deletes the inline row as it deletes an object, and the quota is
// refunded to the byte.
func TestInlineObjectsDedupAndCollect(t *testing.T) {
	b := setup(t, inlineNamespaces)
	ctx := t.Context()
	data := randomBytes(t, 2000)
	inline := b.put(t, "inl", data)
	streamed, err := b.store.Put(ctx, "inl", streamOf(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if streamed.Digest != inline.Digest || len(b.objectFiles(t, "inl")) != 0 {
		t.Fatalf("the streamed copy: %+v, objects %v; want it shared with the inline blob and no object left", streamed, b.objectFiles(t, "inl"))
	}
	other := randomBytes(t, 2500)
	object, err := b.store.Put(ctx, "inl", streamOf(other), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again := b.put(t, "inl", other)
	if rows, _ := b.store.InlineObjects(ctx, "inl/"); len(rows) != 1 || again.Digest != object.Digest {
		t.Fatalf("inline rows %+v after an inline put of an object's bytes; want only the first payload's", rows)
	}
	for _, ref := range []claimcheck.Ref{inline, streamed, object, again} {
		if got, err := b.redeem(t, ref); err != nil || len(got) == 0 {
			t.Fatalf("redeem %s: %v", ref.ID, err)
		}
		if err := b.store.Delete(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	b.clock.Advance(2 * time.Hour) // past the grace period
	for range 3 {
		if _, err := b.store.SweepOnce(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	if rows, err := b.store.InlineObjects(ctx, "inl/"); err != nil || len(rows) != 0 {
		t.Fatalf("inline rows after collection: %+v, %v", rows, err)
	}
	if objs := b.objectFiles(t, "inl"); len(objs) != 0 {
		t.Fatalf("objects after collection: %v", objs)
	}
	info, err := b.store.Namespace(ctx, "inl")
	if u := info.Usage; err != nil || u.UsedBytes != 0 || u.ReservedBytes != 0 || u.ActiveClaims != 0 || u.PendingClaims != 0 {
		t.Fatalf("usage after collection: %+v, %v; want nothing held", info.Usage, err)
	}
}

// TestInlineObjectVerified: a damaged inline row is never handed out as
// the payload: the redeem fails its digest check as an object's would.
func TestInlineObjectVerified(t *testing.T) {
	b := setup(t, inlineNamespaces)
	ctx := t.Context()
	data := randomBytes(t, 1500)
	ref := b.put(t, "inl", data)
	rows, err := b.store.InlineObjects(ctx, "inl/")
	if err != nil || len(rows) != 1 {
		t.Fatalf("inline objects %+v, %v", rows, err)
	}
	bad := bytes.Clone(data)
	bad[700] ^= 1
	if err := b.store.OverwriteInlineObject(ctx, rows[0].Key, bad); err != nil {
		t.Fatal(err)
	}
	got, err := b.redeem(t, ref)
	if !errors.Is(err, claimcheck.ErrChecksumMismatch) || bytes.Equal(got, bad) {
		t.Fatalf("redeem of a damaged inline object: %d bytes, %v; want a checksum mismatch", len(got), err)
	}
}

// TestInlineBelowValidated: inline_below is named with its limit when
// out of range.
func TestInlineBelowValidated(t *testing.T) {
	p := claimcheck.BuiltinPolicy()
	p.InlineBelow = claimcheck.MaxInlineBelow + 1
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "inline_below") || !strings.Contains(err.Error(), claimcheck.MaxInlineBelow.String()) {
		t.Fatalf("inline_below past the limit: %v", err)
	}
}

// TestInlineObjectsShredded: destroying an encrypted namespace's data key
// makes its inline payloads gone (key_destroyed) as it does its objects,
// and the sweeper deletes their rows after the grace period; a new put
// is sealed under a new key and never shares the shredded row.
func TestInlineObjectsShredded(t *testing.T) {
	b := setup(t, inlineNamespaces)
	ctx := t.Context()
	data := randomBytes(t, 3000)
	ref := b.put(t, "inlsealed", data)
	before, err := b.store.InlineObjects(ctx, "inlsealed/")
	if err != nil || len(before) != 1 {
		t.Fatalf("inline objects before the shred: %+v, %v", before, err)
	}
	if err := b.store.DestroyNamespaceKey(ctx, "inlsealed"); err != nil {
		t.Fatal(err)
	}
	_, err = b.redeem(t, ref)
	wantGone(t, err, claimcheck.ReasonKeyDestroyed)
	again := b.put(t, "inlsealed", data)
	if got, err := b.redeem(t, again); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("put after the shred: %v", err)
	}
	b.clock.Advance(2 * time.Hour) // past the grace period
	b.sweep(t)
	after, err := b.store.InlineObjects(ctx, "inlsealed/")
	if err != nil || len(after) != 1 || after[0].Key == before[0].Key {
		t.Fatalf("inline objects after the shred and a sweep: %+v, %v; want only the new put's, not %s", after, err, before[0].Key)
	}
}
