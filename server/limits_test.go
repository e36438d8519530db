package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// TestStalledUploadIsCutOff: a client that stops sending its body for
// longer than read_timeout loses the request, and nothing is stored. The
// test waits for the server's answer (or hang-up), not for a clock.
func TestStalledUploadIsCutOff(t *testing.T) {
	b := setupAuth(t, server.Limits{ReadTimeout: claimcheck.Duration(200 * time.Millisecond)})
	token := b.key(t, "acme", auth.RoleProducer, "")
	if status := sendStalled(t, b, "PUT /v1/namespaces/a2/claims", "Authorization: Bearer "+token); status == http.StatusCreated {
		t.Fatalf("a stalled upload was stored: %d", status)
	}
	ns, err := b.meta.Namespace(context.Background(), "a2")
	if err != nil {
		t.Fatal(err)
	}
	if ns.ActiveClaims != 0 || ns.PendingClaims != 0 || ns.ReservedBytes != 0 {
		t.Fatalf("after a stalled upload: %+v, want nothing stored or reserved", ns)
	}
}

// TestStalledUploadDataIsCutOff: the PUT to a signed upload URL has the
// same read_timeout, though it carries no key: a stalled body is cut off
// and nothing is uploaded.
func TestStalledUploadDataIsCutOff(t *testing.T) {
	b := setupAuth(t, server.Limits{ReadTimeout: claimcheck.Duration(200 * time.Millisecond)})
	token := b.key(t, "acme", auth.RoleProducer, "")
	_, answer, u := initUpload(t, b, token, make([]byte, 1000))
	if u.URL == "" {
		t.Fatalf("init: %s", answer)
	}
	if status := sendStalled(t, b, "PUT "+strings.TrimPrefix(u.URL, b.http.URL)); status == http.StatusNoContent {
		t.Fatal("a stalled upload PUT was accepted")
	}
	resp, body := b.do(t, token, http.MethodPost, "/v1/uploads/"+u.ID+"/confirm", nil)
	if e := wantError(t, resp, body, http.StatusBadRequest, api.CodeInvalidArgument); !strings.Contains(e.Message, "nothing") {
		t.Fatalf("confirm after the stalled PUT: %s, want nothing uploaded", e.Message)
	}
}

// sendStalled sends the request line and headers of head with a
// Content-Length of 1000, then 10 bytes of body, then nothing. It
// returns the status the server answered, or 0 if it hung up; it fails
// the test if the server waited for the rest.
func sendStalled(t *testing.T, b *authBundle, head string, header ...string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A safety net against a hung test only; the server's deadline is what
	// ends the wait.
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: x\r\n", head); err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		if _, err := fmt.Fprintf(conn, "%s\r\n", h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fmt.Fprintf(conn, "Content-Length: 1000\r\n\r\nonly ten b"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server never cut the stalled body off")
	}
	if err != nil {
		return 0 // hung up: the request ended
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestLimitsDefaults: serve's defaults, and negative values switch a
// limit off.
func TestLimitsDefaults(t *testing.T) {
	d := server.Limits{}.WithDefaults()
	if d.RateLimit != server.DefaultRateLimit || d.RateBurst != server.DefaultRateBurst || d.MaxStreamsPerKey != server.DefaultMaxStreamsPerKey ||
		d.ReadTimeout != server.DefaultReadTimeout || d.WriteTimeout != server.DefaultWriteTimeout || d.MaxHeaderBytes != server.DefaultMaxHeaderBytes {
		t.Fatalf("defaults: %+v", d)
	}
	off := server.Limits{RateLimit: -1, MaxStreamsPerKey: -1, ReadTimeout: -1}.WithDefaults()
	if off.RateLimit != 0 || off.MaxStreamsPerKey != 0 || off.ReadTimeout != 0 {
		t.Fatalf("negative values must switch limits off: %+v", off)
	}
	if err := (server.Limits{MaxHeaderBytes: 100}).Validate(); err == nil || !strings.Contains(err.Error(), "max_header_bytes") {
		t.Fatalf("Validate(max_header_bytes 100) = %v, want an error naming the field", err)
	}
}

// TestTrustedProxies: behind a trusted proxy the client address (in
// auth_failed events and per-address limits) comes from X-Forwarded-For;
// from anyone else the header is ignored.
func TestTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		trusted []string
		want    string
	}{
		{nil, "from 127.0.0.1"},
		{[]string{"127.0.0.0/8"}, "from 203.0.113.7"},
		{[]string{"10.0.0.0/8"}, "from 127.0.0.1"},
	} {
		b := setupAuth(t, server.Limits{TrustedProxies: tc.trusted})
		bad := auth.TokenPrefix + "aaaaaaaaaaaaaaaa_" + strings.Repeat("A", 43)
		resp, _ := b.do(t, bad, http.MethodGet, "/v1/namespaces/a1", nil, "X-Forwarded-For", "198.51.100.1, 203.0.113.7")
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad key: %s", resp.Status)
		}
		evs, err := b.meta.Events(context.Background(), 0, 10)
		if err != nil || len(evs) != 1 || !strings.Contains(evs[0].Detail, tc.want) {
			t.Errorf("trusted %v: events %+v %v, want one naming %q", tc.trusted, evs, err, tc.want)
		}
	}
	if err := (server.Limits{TrustedProxies: []string{"not-an-ip"}}).Validate(); err == nil || !strings.Contains(err.Error(), "http.trusted_proxies") {
		t.Fatalf("Validate(bad trusted_proxies) = %v", err)
	}
}

// TestStalledDownloadIsCutOff: a client that stops reading a payload for
// longer than write_timeout loses its connection, and its stream slot is
// free again. The test waits for the server to close the connection (its
// ConnState hook), not for a clock.
func TestStalledDownloadIsCutOff(t *testing.T) {
	b := setupAuth(t, server.Limits{WriteTimeout: claimcheck.Duration(200 * time.Millisecond), MaxStreamsPerKey: 1})
	token := b.key(t, "acme", auth.RoleConsumer, "")
	// Larger than any socket buffers on the way, and incompressible.
	payload := make([]byte, 32<<20)
	rand.Read(payload)
	ref, err := b.store.Put(context.Background(), "a2", bytes.NewReader(payload), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(b.http.Config.Handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "GET /v1/claims/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", ref.ID, token); err != nil {
		t.Fatal(err)
	}
	// Read nothing: the server's writes stall, its deadline ends the
	// request and it closes the connection.
	<-closed

	// The slot is free: the next redeem of the key is served whole. It is
	// of a payload small enough for the socket buffers, so that no write
	// of it can stall past the short deadline on a busy machine whatever
	// the reader's pace.
	small := payload[:64<<10]
	sref, err := b.store.Put(context.Background(), "a2", bytes.NewReader(small), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/claims/"+sref.ID, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, small) {
		t.Fatalf("redeem after the stalled one: %s, %d bytes, %v", resp.Status, len(got), err)
	}
}

// TestRateLimitWithoutAuth: with auth off, requests count per client
// address, and one address is often a whole producer host or a NAT: a
// rate_limit left unset is no limit then (ADR 0262), while one the
// operator sets still applies per address. With auth on the default
// stays.
func TestRateLimitWithoutAuth(t *testing.T) {
	if on := (server.Limits{}).WithAuthDefaults(true); on.RateLimit != server.DefaultRateLimit {
		t.Fatalf("auth on: rate_limit %g, want the default %g", on.RateLimit, server.DefaultRateLimit)
	}
	for _, tc := range []struct {
		name    string
		limits  server.Limits
		refused bool
	}{
		{"unset", server.Limits{RateBurst: 3}, false},
		{"set", server.Limits{RateLimit: 1.0 / 3600, RateBurst: 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limits := tc.limits.WithAuthDefaults(false)
			store := openStore(t)
			srv := httptest.NewServer(server.New(server.Config{Claims: store, Ready: store.Ready, Limits: limits}))
			t.Cleanup(srv.Close)
			refused := 0
			for range 10 {
				resp, err := srv.Client().Get(srv.URL + "/v1/namespaces/orders")
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					refused++
					if !strings.Contains(string(body), "http.rate_limit") || !strings.Contains(string(body), "per client address") {
						t.Fatalf("refusal %s, want it to name http.rate_limit per client address", body)
					}
				}
			}
			if (refused > 0) != tc.refused {
				t.Fatalf("%d of 10 requests from one address refused; want refusals: %v", refused, tc.refused)
			}
		})
	}
}

// openStore is the embedded store in a temporary directory.
func openStore(t *testing.T) *engine.Store {
	t.Helper()
	return enginetest.Open(t, engine.Config{})
}
