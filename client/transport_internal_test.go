package client

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
)

// decodeRef reads a reference answered on a connection the server closes
// without its final newline; without one, or with anything else after the
// reference, it reads the whole body, and refuses what is not a ref.
func TestDecodeRef(t *testing.T) {
	ref := claimcheck.Ref{ID: "cc_7QmFx0aZ3kLq9WbVtYc2Rg", Namespace: "ns", Size: 3, StoredSize: 3, Compression: "none",
		Digest: "sha256:" + strings.Repeat("ab", 32)}
	js := ref.String()
	for _, tc := range []struct {
		name  string
		close bool
		body  string
		ok    bool
	}{
		{"closing, newline", true, js + "\n", true},
		{"closing, no newline", true, js, true},
		{"closing, two newlines", true, js + "\n\n", true},
		{"kept, newline", false, js + "\n", true},
		{"closing, truncated", true, js[:len(js)-1], false},
		{"closing, two refs", true, js + js, false},
		{"kept, trailing data", false, js + "x", false},
		{"closing, not a ref", true, `{"type":"other"}` + "\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.close {
					w.Header().Set("Connection", "close")
				}
				w.Header().Set("Content-Length", fmt.Sprint(len(tc.body)))
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Close != tc.close {
				t.Fatalf("resp.Close = %v, want %v", resp.Close, tc.close)
			}
			got, err := decodeRef(resp)
			if !tc.ok {
				if err == nil || !errors.Is(err, claimcheck.ErrInvalidArgument) {
					t.Fatalf("decodeRef = %+v, %v; want an invalid-argument error", got, err)
				}
				return
			}
			if err != nil || got.ID != ref.ID || got.Digest != ref.Digest || got.Size != ref.Size {
				t.Fatalf("decodeRef = %+v, %v; want %+v", got, err, ref)
			}
		})
	}
}
