package server_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// A client that reads trailers and names zstd in Accept-Encoding gets a
// payload stored as zstd as its stored frames, with Content-Encoding:
// zstd and the payload's own size and reference (ADR 0136). Any other
// request, a range, or a payload stored otherwise gets the decoded,
// server-verified bytes.
func TestRedeemZstdEncoded(t *testing.T) {
	b := setup(t)
	data := bytes.Repeat([]byte(`{"order":42,"items":["a","b"]},`), 20_000) // several frames
	zipped := b.put(t, "zipped", data)
	raw := b.put(t, "raw", data)
	if zipped.Compression != "zstd" || raw.Compression != "none" {
		t.Fatalf("stored as %s and %s, want zstd and none", zipped.Compression, raw.Compression)
	}
	decoded := func(t *testing.T, frames []byte) []byte {
		t.Helper()
		d, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		got, err := d.DecodeAll(frames, nil)
		if err != nil {
			t.Fatalf("the encoded body does not decode: %v", err)
		}
		return got
	}

	resp, body := b.do(t, http.MethodGet, "/v1/claims/"+zipped.ID, nil, "Accept-Encoding", "gzip, zstd;q=0.5", "TE", "trailers")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "zstd" {
		t.Fatalf("%s, Content-Encoding %q; want 200 zstd", resp.Status, resp.Header.Get("Content-Encoding"))
	}
	if int64(len(body)) != zipped.StoredSize || !bytes.Equal(decoded(t, body), data) {
		t.Fatalf("encoded body of %d bytes (stored %d) does not decode to the payload", len(body), zipped.StoredSize)
	}
	if resp.Header.Get("Claimcheck-Size") != "620000" || resp.Trailer.Get("Claimcheck-Error") != "" {
		t.Errorf("Claimcheck-Size %q, trailer %q", resp.Header.Get("Claimcheck-Size"), resp.Trailer.Get("Claimcheck-Error"))
	}
	if v := resp.Header.Values("Vary"); len(v) == 0 || v[len(v)-1] != "Accept-Encoding, TE" {
		t.Errorf("Vary %q", v)
	}

	for _, c := range []struct {
		name   string
		id     string
		header []string
	}{
		{"without TE: trailers", zipped.ID, []string{"Accept-Encoding", "zstd"}},
		{"zstd refused", zipped.ID, []string{"Accept-Encoding", "zstd;q=0, gzip", "TE", "trailers"}},
		{"only *", zipped.ID, []string{"Accept-Encoding", "*", "TE", "trailers"}},
		{"a range", zipped.ID, []string{"Accept-Encoding", "zstd", "TE", "trailers", "Range", "bytes=0-"}},
		{"stored uncompressed", raw.ID, []string{"Accept-Encoding", "zstd", "TE", "trailers"}},
	} {
		resp, body := b.do(t, http.MethodGet, "/v1/claims/"+c.id, nil, c.header...)
		if resp.StatusCode/100 != 2 || resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, data) {
			t.Errorf("%s: %s, Content-Encoding %q, %d bytes; want the payload itself", c.name, resp.Status, resp.Header.Get("Content-Encoding"), len(body))
		}
	}
}
