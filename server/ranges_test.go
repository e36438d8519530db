package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Ranged redeems over HTTP (ADR 0110), through the OpenAPI contract
// check: 206 with Content-Range, 416 with the size, the forms the server
// ignores, and the ones it refuses.
func TestRedeemRangeOverHTTP(t *testing.T) {
	b := setup(t)
	const size = 200_000
	data := bytes.Repeat([]byte("0123456789abcdef claimcheck "), size/28+1)[:size]
	for _, ns := range []string{"raw", "zipped"} {
		ref := b.put(t, ns, data)
		path := "/v1/claims/" + ref.ID
		for _, c := range []struct {
			header     string
			start, end int // the slice of data answered
		}{
			{"bytes=0-0", 0, 1},
			{"bytes=100-199", 100, 200},
			{"bytes=-10", size - 10, size},
			{"bytes=-300000", 0, size},
			{"bytes=150000-", 150000, size},
			{"bytes=199990-300000", 199990, size},
			{"Bytes = 70000-70009", 70000, 70010},
		} {
			resp, body := b.do(t, http.MethodGet, path, nil, "Range", c.header, "TE", "trailers")
			if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, data[c.start:c.end]) {
				t.Fatalf("%s: Range %s: %s, %d bytes; want 206 and bytes %d-%d", ns, c.header, resp.Status, len(body), c.start, c.end)
			}
			if got, want := resp.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", c.start, c.end-1, size); got != want {
				t.Errorf("%s: Range %s: Content-Range %q, want %q", ns, c.header, got, want)
			}
			if resp.Header.Get("Accept-Ranges") != "bytes" || resp.Trailer.Get("Claimcheck-Error") != "" {
				t.Errorf("%s: Range %s: Accept-Ranges %q, trailer %q", ns, c.header, resp.Header.Get("Accept-Ranges"), resp.Trailer.Get("Claimcheck-Error"))
			}
		}
		for _, h := range []string{"bytes=200000-", "bytes=-0", "bytes=10-5", "bytes=999999-1000000"} {
			resp, body := b.do(t, http.MethodGet, path, nil, "Range", h)
			e := wantError(t, resp, body, http.StatusRequestedRangeNotSatisfiable, "range_not_satisfiable")
			if got := resp.Header.Get("Content-Range"); got != fmt.Sprintf("bytes */%d", size) {
				t.Errorf("%s: Range %s: Content-Range %q", ns, h, got)
			}
			if !strings.Contains(e.Message, "header Range") {
				t.Errorf("%s: Range %s: message %q does not name the header", ns, h, e.Message)
			}
		}
		// Several ranges, another unit: ignored, the whole payload.
		for _, h := range []string{"bytes=0-1,5-6", "items=0-1"} {
			resp, body := b.do(t, http.MethodGet, path, nil, "Range", h)
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) || resp.Header.Get("Accept-Ranges") != "bytes" {
				t.Fatalf("%s: Range %s: %s, %d bytes; want the whole payload", ns, h, resp.Status, len(body))
			}
		}
		for _, h := range []string{"bytes=abc", "bytes=1-x", "bytes=5", "0-10"} {
			resp, body := b.do(t, http.MethodGet, path, nil, "Range", h)
			e := wantError(t, resp, body, http.StatusBadRequest, "invalid_argument")
			if !strings.Contains(e.Message, "header Range") {
				t.Errorf("Range %s: message %q does not name the header", h, e.Message)
			}
		}
		resp, body := b.do(t, http.MethodGet, path, nil, "Range", "bytes=0-1", "Range", "bytes=2-3")
		wantError(t, resp, body, http.StatusBadRequest, "invalid_argument")
	}
	// An unknown claim is 404 before any range is looked at.
	resp, body := b.do(t, http.MethodGet, "/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA", nil, "Range", "bytes=-0")
	wantError(t, resp, body, http.StatusNotFound, "not_found")
}
