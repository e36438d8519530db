package server_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// TestFailedAuthDoesNotLockOutValidKeys: a client that keeps failing to
// authenticate from 127.0.0.1 is limited (429 once over its budget), and
// a valid key from the very same address still gets its 201 every time.
// Bounded: 3 × the failure burst of requests.
func TestFailedAuthDoesNotLockOutValidKeys(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	good := b.key(t, "acme", auth.RoleProducer, "")
	bogus := "cck_aaaaaaaaaaaaaaaa_" + strings.Repeat("A", 43) // well-formed, unknown
	const attempts = 60                                        // 3 × the burst of 20
	limited := 0
	for i := range attempts {
		token := bogus
		switch i % 3 {
		case 1:
			token = "not-a-token"
		case 2:
			token = ""
		}
		resp, body := b.do(t, token, http.MethodGet, "/v1/namespaces/a1", nil)
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			// Within the budget (which refills at one a second, so a
			// 401 may come back later: only the count is asserted).
		case http.StatusTooManyRequests:
			limited++
			if codeOf(body) != api.CodeRateLimited || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "failed authentications") {
				t.Fatalf("attempt %d: 429 %s, Retry-After %q", i, body, resp.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("attempt %d with %q: %s %s", i, token, resp.Status, body)
		}
		// Meanwhile the good key, from the same address, is served.
		if i%5 == 0 || limited > 0 {
			resp, body := b.do(t, good, http.MethodPut, "/v1/namespaces/a1/claims", strings.NewReader("payload"))
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("after %d failures (%d limited), the valid key got %s %s", i+1, limited, resp.Status, body)
			}
		}
	}
	if limited == 0 {
		t.Fatalf("%d failed authentications from one address were never limited", attempts)
	}
}

// TestConnectionsPerAddressAreBounded: with http.max_conns_per_addr 5,
// a client at 127.0.0.1 that opens 10 connections and sends nothing
// keeps 5 of them (they still work), the other 5 are closed at once, and
// a client at another address (127.0.0.2, also loopback) is served.
func TestConnectionsPerAddressAreBounded(t *testing.T) {
	const limit, opened = 5, 10
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t)
	h := server.New(server.Config{Claims: b.store})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- server.ServeWith(ctx, ln, h, nil, server.Options{Limits: server.Limits{MaxConnsPerAddr: limit}})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Logf("serve: %v", err)
		}
	}()
	addr := ln.Addr().String()

	var conns []net.Conn
	for range opened {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// Beyond the bound: closed by the server before it read anything.
	for i, c := range conns[limit:] {
		n, err := c.Read(make([]byte, 1))
		if n != 0 || err == nil {
			t.Errorf("connection %d beyond the bound: read %d bytes, %v; want it closed", limit+i+1, n, err)
		}
	}
	// Another address is not affected by this one's connections.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	if other, err := d.Dial("tcp", addr); err != nil {
		t.Logf("no second loopback address here (%v); skipping that part", err)
	} else {
		defer other.Close()
		if status := healthz(t, other); status != http.StatusOK {
			t.Errorf("/healthz from 127.0.0.2 while 127.0.0.1 is at its bound: %d", status)
		}
	}
	// Within the bound: served.
	for i, c := range conns[:limit] {
		if status := healthz(t, c); status != http.StatusOK {
			t.Errorf("connection %d within the bound: /healthz %d", i+1, status)
		}
	}
}

// healthz sends GET /healthz on c and returns the status.
func healthz(t *testing.T, c net.Conn) int {
	t.Helper()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPendingBytesPerKey: with http.max_pending_bytes_per_key 100, a key
// with an 80-byte put in progress (its body held back) is refused a
// further 30-byte put and a 30-byte upload init with 429 naming the
// setting, while another key of the same tenant is served; once the put
// commits, the key may put again. An upload init holds its size until it
// is confirmed.
func TestPendingBytesPerKey(t *testing.T) {
	b := setupAuth(t, server.Limits{MaxPendingBytesPerKey: 100})
	slow := b.key(t, "acme", auth.RoleProducer, "")
	other := b.key(t, "acme", auth.RoleProducer, "")
	payload := bytes.Repeat([]byte("s"), 80)

	entered := make(chan struct{}, 1)
	b.actors.mu.Lock()
	b.actors.entered = entered
	b.actors.mu.Unlock()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPut, b.http.URL+"/v1/namespaces/a2/claims", pr)
		req.ContentLength = int64(len(payload))
		req.Header.Set("Authorization", "Bearer "+slow)
		resp, err := b.http.Client().Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-entered // the slow put holds its 80 bytes
	b.actors.mu.Lock()
	b.actors.entered = nil
	b.actors.mu.Unlock()

	small := bytes.Repeat([]byte("x"), 30)
	resp, body := b.do(t, slow, http.MethodPut, "/v1/namespaces/a2/claims", bytes.NewReader(small))
	e := wantError(t, resp, body, http.StatusTooManyRequests, api.CodeRateLimited)
	if !strings.Contains(e.Message, "http.max_pending_bytes_per_key") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second put of the slow key: %q, Retry-After %q", e.Message, resp.Header.Get("Retry-After"))
	}
	if resp, body, _ := initUpload(t, b, slow, small); resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "max_pending_bytes_per_key") {
		t.Errorf("upload init of the slow key: %s %s, want 429", resp.Status, body)
	}
	if resp, body := b.do(t, other, http.MethodPut, "/v1/namespaces/a2/claims", bytes.NewReader(payload)); resp.StatusCode != http.StatusCreated {
		t.Errorf("another key of the tenant: %s %s, want 201", resp.Status, body)
	}

	if _, err := pw.Write(payload); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if status := <-done; status != http.StatusCreated {
		t.Fatalf("the slow put: %d", status)
	}
	if resp, body := b.do(t, slow, http.MethodPut, "/v1/namespaces/a2/claims", bytes.NewReader(small)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("after the slow put committed: %s %s, want 201", resp.Status, body)
	}

	// An upload init holds its size until confirmed.
	big := bytes.Repeat([]byte("u"), 90)
	resp, body, u := initUpload(t, b, slow, big)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload init: %s %s", resp.Status, body)
	}
	if resp, _ := b.do(t, slow, http.MethodPut, "/v1/namespaces/a2/claims", bytes.NewReader(small)); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("put beside a 90-byte upload init: %s, want 429", resp.Status)
	}
	if resp, body := b.do(t, "", http.MethodPut, strings.TrimPrefix(u.URL, b.http.URL), bytes.NewReader(big)); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("upload data: %s %s", resp.Status, body)
	}
	if resp, body := b.do(t, slow, http.MethodPost, "/v1/uploads/"+u.ID+"/confirm", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("confirm: %s %s", resp.Status, body)
	}
	if resp, body := b.do(t, slow, http.MethodPut, "/v1/namespaces/a2/claims", bytes.NewReader(small)); resp.StatusCode != http.StatusCreated {
		t.Errorf("put after the upload was confirmed: %s %s, want 201", resp.Status, body)
	}
}

// TestKeyRequestIsStrict: the key route's JSON body is one object too.
func TestKeyRequestIsStrict(t *testing.T) {
	b := setupAuth(t, server.Limits{})
	admin := b.key(t, "acme", auth.RoleAdmin, "")
	resp, body := b.do(t, admin, http.MethodPost, "/v1/keys", strings.NewReader(`{"role":"producer"}{"role":"admin"}`), "Content-Type", api.ContentTypeJSON)
	e := wantError(t, resp, body, http.StatusBadRequest, api.CodeInvalidArgument)
	if !strings.Contains(e.Message, "found more data") {
		t.Errorf("message %q", e.Message)
	}
}
