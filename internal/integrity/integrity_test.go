package integrity_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/memstore"
	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/integrity"
	"github.com/claimcheck/claimcheck/meta"
)

func put(t *testing.T, bs blob.Store, key string, data []byte) {
	t.Helper()
	w, err := bs.NewWriter(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckSizeAndReadBack: the cheap check finds a missing or resized
// object; reading back finds content of another size or digest; a good
// plain object passes both and counts its bytes.
func TestCheckSizeAndReadBack(t *testing.T) {
	ctx := context.Background()
	bs, err := blob.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	data := []byte("the bytes of a payload")
	sum := sha256.Sum256(data)
	good := meta.Blob{ID: "b1", Key: "ns/b1", Size: int64(len(data)), StoredSize: int64(len(data)),
		Digest: "sha256:" + hex.EncodeToString(sum[:]), Compression: compress.None}
	put(t, bs, good.Key, data)

	if f, err := integrity.CheckSize(ctx, bs, good); err != nil || f.Cause != "" {
		t.Fatalf("CheckSize of a good object = %+v, %v", f, err)
	}
	if f, n, err := integrity.ReadBack(ctx, bs, good, nil); err != nil || f.Cause != "" || n != int64(len(data)) {
		t.Fatalf("ReadBack of a good object = %+v, %d, %v", f, n, err)
	}

	missing := good
	missing.Key = "ns/gone"
	if f, err := integrity.CheckSize(ctx, bs, missing); err != nil || f.Cause != meta.DamageMissing {
		t.Errorf("CheckSize of a missing object = %+v, %v", f, err)
	}
	if f, _, err := integrity.ReadBack(ctx, bs, missing, nil); err != nil || f.Cause != meta.DamageMissing {
		t.Errorf("ReadBack of a missing object = %+v, %v", f, err)
	}

	resized := good
	resized.StoredSize++
	if f, err := integrity.CheckSize(ctx, bs, resized); err != nil || f.Cause != meta.DamageSize {
		t.Errorf("CheckSize of a resized object = %+v, %v", f, err)
	}

	short := good
	short.Size++
	if f, _, err := integrity.ReadBack(ctx, bs, short, nil); err != nil || f.Cause != meta.DamageChecksum {
		t.Errorf("ReadBack of content of another size = %+v, %v", f, err)
	}

	altered := good
	put(t, bs, "ns/b2", bytes.ToUpper(data))
	altered.Key = "ns/b2"
	if f, _, err := integrity.ReadBack(ctx, bs, altered, nil); err != nil || f.Cause != meta.DamageChecksum {
		t.Errorf("ReadBack of altered content = %+v, %v", f, err)
	}
}
