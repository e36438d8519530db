package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/claimcheck/claimcheck"
)

// RedeemEncoded (ADR 0136) hands out the zstd frames of a zstd payload,
// decrypted when sealed, and counts a read; a payload stored
// uncompressed is handed out as stored to a reader of zstd (ADR 0155);
// every other storage form, or another encoding, is the verified payload
// itself.
func TestRedeemEncoded(t *testing.T) {
	b := setup(t, ranged)
	ctx := context.Background()
	data := jsonDoc(700_000)
	for _, ns := range rangeNamespaces {
		ref := b.put(t, ns, data)
		for _, encoding := range []string{claimcheck.EncodingZstd, "br"} {
			e, err := b.store.RedeemEncoded(ctx, ref, encoding)
			if err != nil {
				t.Fatalf("%s, %s: %v", ns, encoding, err)
			}
			got, err := io.ReadAll(e)
			e.Close()
			if err != nil {
				t.Fatalf("%s, %s: reading: %v", ns, encoding, err)
			}
			framed := encoding == claimcheck.EncodingZstd && ref.Compression == "zstd"
			asStored := encoding == claimcheck.EncodingZstd && ref.Compression == "none"
			if framed != (e.Encoding == claimcheck.EncodingZstd) || asStored != (e.Encoding == claimcheck.EncodingIdentity) {
				t.Fatalf("%s (stored %s), asked %s: encoding %q", ns, ref.Compression, encoding, e.Encoding)
			}
			if framed {
				d, _ := zstd.NewReader(nil)
				got, err = d.DecodeAll(got, nil)
				d.Close()
				if err != nil {
					t.Fatalf("%s: the frames do not decode: %v", ns, err)
				}
			}
			if !bytes.Equal(got, data) || e.Ref.Digest != ref.Digest {
				t.Fatalf("%s, %s: %d bytes, not the payload", ns, encoding, len(got))
			}
		}
		if info, err := b.store.Stat(ctx, ref); err != nil || info.Reads != 2 {
			t.Fatalf("%s: reads %d, %v; want 2", ns, info.Reads, err)
		}
	}
}

// A stored zstd object that is shorter or longer than recorded, or whose
// seek table is altered, fails the encoded stream with
// ErrChecksumMismatch and marks the blob damaged, as a decoding redeem
// does; so does a sealed one altered anywhere.
func TestRedeemEncodedDamage(t *testing.T) {
	ctx := context.Background()
	data := jsonDoc(400_000)
	for _, c := range []struct {
		ns     string
		damage func(raw []byte) []byte
	}{
		{"zs", func(raw []byte) []byte { return raw[:len(raw)-5] }},
		{"zs", func(raw []byte) []byte { return append(raw, 0) }},
		{"zs", func(raw []byte) []byte { raw[len(raw)-10] ^= 0x40; return raw }}, // in the seek table
		{"sealedz", func(raw []byte) []byte { raw[len(raw)/2] ^= 1; return raw }},
		// Stored uncompressed, handed out as stored (ADR 0155): the count
		// is checked here, the bytes by the reader (below).
		{"plain", func(raw []byte) []byte { return raw[:len(raw)-5] }},
		{"plain", func(raw []byte) []byte { return append(raw, 0) }},
		{"sealed", func(raw []byte) []byte { raw[len(raw)/2] ^= 1; return raw }},
	} {
		b := setup(t, ranged)
		ref := b.put(t, c.ns, data)
		f := b.objectFiles(t, c.ns)[0]
		raw, _ := os.ReadFile(f)
		if err := os.WriteFile(f, c.damage(raw), 0o600); err != nil {
			t.Fatal(err)
		}
		e, err := b.store.RedeemEncoded(ctx, ref, claimcheck.EncodingZstd)
		if err == nil {
			_, err = io.ReadAll(e)
			e.Close()
		}
		if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("%s: damaged object: %v, want ErrChecksumMismatch", c.ns, err)
		}
		if _, err := b.store.RedeemEncoded(ctx, ref, claimcheck.EncodingZstd); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("%s: the next redeem: %v, want ErrChecksumMismatch before any byte (blob damaged)", c.ns, err)
		}
	}
}

// An altered byte of an object stored uncompressed passes the store's
// count check on the stored form, and the reader's verification catches
// it: a Payload over the stored bytes never ends in io.EOF (ADR 0155).
func TestRedeemEncodedAsStoredIsVerifiedByTheReader(t *testing.T) {
	ctx := context.Background()
	b := setup(t, ranged)
	data := jsonDoc(400_000)
	ref := b.put(t, "plain", data)
	f := b.objectFiles(t, "plain")[0]
	raw, _ := os.ReadFile(f)
	raw[len(raw)/3] ^= 1
	if err := os.WriteFile(f, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := b.store.RedeemEncoded(ctx, ref, claimcheck.EncodingZstd)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Encoding != claimcheck.EncodingIdentity {
		t.Fatalf("encoding %q, want identity", e.Encoding)
	}
	p := claimcheck.NewPayload(e.Ref, e.ContentType, e)
	if _, err := io.Copy(io.Discard, p); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("reading the altered payload as stored: %v, want ErrChecksumMismatch", err)
	}
}
