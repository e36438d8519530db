package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// encodings records the Content-Encoding of every answer.
type encodings struct {
	rt   http.RoundTripper
	seen []string
}

func (e *encodings) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := e.rt.RoundTrip(r)
	if err == nil {
		e.seen = append(e.seen, resp.Header.Get("Content-Encoding"))
	}
	return resp, err
}

// A payload stored as zstd travels as its stored frames (ADR 0136) and
// is decoded and verified by the client; a flipped byte in a frame or a
// truncated object is a checksum mismatch all the same, and the
// truncation marks the blob damaged on the server.
func TestRedeemZstdFrames(t *testing.T) {
	b := setup(t)
	rec := &encodings{rt: http.DefaultTransport.(*http.Transport).Clone()}
	c, err := client.New(b.http.URL, client.WithHTTPClient(&http.Client{Transport: rec}))
	if err != nil {
		t.Fatal(err)
	}
	redeem := func(ref claimcheck.Ref) ([]byte, error) {
		p, err := c.Redeem(context.Background(), ref)
		if err != nil {
			return nil, err
		}
		return p.Bytes()
	}
	data := bytes.Repeat([]byte(`{"id":1,"status":"paid","amount":12.5},`), 30_000) // several frames
	for _, ns := range []string{"orders", "raw"} {
		ref := b.put(t, ns, data, claimcheck.PutOptions{})
		rec.seen = nil
		got, err := redeem(ref)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %d bytes, %v", ns, len(got), err)
		}
		want := map[string]string{"orders": "zstd", "raw": ""}[ns]
		if len(rec.seen) != 1 || rec.seen[0] != want {
			t.Fatalf("%s (stored %s): answers with Content-Encoding %q, want %q", ns, ref.Compression, rec.seen, want)
		}
	}

	object := func(t *testing.T, ref claimcheck.Ref) string {
		t.Helper()
		for _, key := range b.objects(t) {
			f := filepath.Join(b.dir, "blobs", key)
			if info, err := os.Stat(f); err == nil && info.Size() == ref.StoredSize {
				return f
			}
		}
		t.Fatalf("no object of %d bytes for %s", ref.StoredSize, ref.ID)
		return ""
	}
	t.Run("flipped byte", func(t *testing.T) {
		ref := b.put(t, "orders", append([]byte("flip "), data...), claimcheck.PutOptions{})
		f := object(t, ref)
		stored, _ := os.ReadFile(f)
		stored[len(stored)/3] ^= 0x40
		if err := os.WriteFile(f, stored, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := redeem(ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("redeem of an altered frame: %v, want ErrChecksumMismatch", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		ref := b.put(t, "orders", append([]byte("cut "), data...), claimcheck.PutOptions{})
		f := object(t, ref)
		if err := os.Truncate(f, ref.StoredSize-100); err != nil {
			t.Fatal(err)
		}
		if _, err := redeem(ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("redeem of a truncated object: %v, want ErrChecksumMismatch", err)
		}
		// The server counted the stored bytes and marked the blob: the
		// next redeem is refused before any byte is sent.
		_, err := c.Redeem(context.Background(), ref)
		if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("redeem after the truncation was found: %v, want ErrChecksumMismatch up front", err)
		}
	})
}
