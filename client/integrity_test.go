package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/server/api"
)

// The client verifies the payload against the ref the server answers
// with, so that ref must be the one asked for: a server (or a proxy) that
// answers with another digest or size would otherwise have other bytes
// verified as good.
func TestRedeemRefusesTamperedRef(t *testing.T) {
	payload := "other bytes entirely"
	asked := claimcheck.Ref{ID: "cc_AAAAAAAAAAAAAAAAAAAAAA", Namespace: "orders", Size: 5, Digest: claimcheck.DigestOf([]byte("hello"))}
	for _, tc := range []struct {
		name   string
		answer func(claimcheck.Ref) claimcheck.Ref
	}{
		{"digest", func(r claimcheck.Ref) claimcheck.Ref {
			r.Digest = claimcheck.DigestOf([]byte(payload))
			r.Size = int64(len(payload))
			return r
		}},
		{"size", func(r claimcheck.Ref) claimcheck.Ref { r.Size = 4; return r }},
		{"namespace", func(r claimcheck.Ref) claimcheck.Ref { r.Namespace = "billing"; return r }},
		{"id", func(r claimcheck.Ref) claimcheck.Ref { r.ID = "cc_BBBBBBBBBBBBBBBBBBBBBB"; return r }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.answer(asked)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("TE") != "trailers" {
					t.Errorf("redeem request without TE: trailers")
				}
				w.Header().Set(api.HeaderRef, got.String())
				_, _ = w.Write([]byte(payload))
			}))
			defer srv.Close()
			c, err := client.New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.Redeem(context.Background(), asked)
			if err == nil {
				b, rerr := p.Bytes()
				t.Fatalf("redeem with a tampered %s in the answered ref: %q, %v; want an error", tc.name, b, rerr)
			}
			if !errors.Is(err, claimcheck.ErrChecksumMismatch) || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("tampered %s: %v; want a checksum mismatch naming it", tc.name, err)
			}
		})
	}
}
