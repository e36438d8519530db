package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/claimcheck/claimcheck"
)

func readPart(t *testing.T, p *claimcheck.Part, err error) ([]byte, error) {
	t.Helper()
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return io.ReadAll(p)
}

// RedeemRange over HTTP, on the default (zstd) and uncompressed
// namespaces, and against a server that does not serve ranges (it
// ignores Range and answers the whole payload, cut here and verified
// whole).
func TestRedeemRange(t *testing.T) {
	ctx := context.Background()
	ignoreRange := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Range")
			h.ServeHTTP(w, r)
		})
	}
	for name, b := range map[string]*bundle{"ranges": setup(t), "whole answers": setupWith(t, ignoreRange)} {
		for _, ns := range []string{"raw", "orders"} {
			data := jsonDoc(300_000)
			size := int64(len(data))
			ref := b.put(t, ns, data, claimcheck.PutOptions{})
			for _, c := range []struct{ off, n, start, end int64 }{
				{0, 1, 0, 1},
				{150_000, 1000, 150_000, 151_000},
				{size - 1, -1, size - 1, size},
				{-5000, 0, size - 5000, size},
				{size - 10, 1 << 20, size - 10, size},
			} {
				p, err := b.client.RedeemRange(ctx, ref, c.off, c.n)
				got, err := readPart(t, p, err)
				if err != nil || !bytes.Equal(got, data[c.start:c.end]) {
					t.Fatalf("%s, %s, range %d,%d: %d bytes, %v; want bytes %d-%d", name, ns, c.off, c.n, len(got), err, c.start, c.end)
				}
				if p.Offset != c.start || p.Length != c.end-c.start || p.Ref.Digest != ref.Digest {
					t.Fatalf("%s, %s: part %d+%d, want %d+%d", name, ns, p.Offset, p.Length, c.start, c.end-c.start)
				}
			}
			_, err := b.client.RedeemRange(ctx, ref, size, -1)
			var re *claimcheck.RangeError
			if !errors.As(err, &re) || re.Size != size {
				t.Fatalf("%s, %s: range past the end: %v, want a RangeError with size %d", name, ns, err, size)
			}
		}
	}
}

// A corrupted zstd object (frames with a seek table, ADR 0112; 64 KiB
// frames since ADR 0150): a part that touches
// the damaged frame fails; one of intact frames is served.
func TestRedeemRangeCorruptCompressed(t *testing.T) {
	b := setup(t)
	data := jsonDoc(2 << 20)
	ref := b.put(t, "orders", data, claimcheck.PutOptions{})
	objs := b.objects(t)
	if len(objs) != 1 {
		t.Fatalf("%d objects", len(objs))
	}
	f := filepath.Join(b.dir, "blobs", objs[0])
	raw, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	raw[1000] ^= 0x01 // in the first frame
	if err := os.WriteFile(f, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := b.client.RedeemRange(context.Background(), ref, 1<<20+10, 1000)
	if got, err := readPart(t, p, err); err != nil || !bytes.Equal(got, data[1<<20+10:1<<20+1010]) {
		t.Fatalf("range of intact frames: %v", err)
	}
	p, err = b.client.RedeemRange(context.Background(), ref, 0, 100_000)
	if _, err := readPart(t, p, err); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("range of a corrupt compressed object: %v, want ErrChecksumMismatch", err)
	}
}
