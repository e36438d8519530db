package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/server"
)

// TestStalledUploadIsCutOff: a client that stops sending its body for
// longer than read_timeout loses the request, and nothing is stored. The
// test waits for the server's answer (or hang-up), not for a clock.
func TestStalledUploadIsCutOff(t *testing.T) {
	b := setupAuth(t, server.Limits{ReadTimeout: claimcheck.Duration(200 * time.Millisecond)})
	token := b.key(t, "acme", auth.RoleProducer, "")
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A safety net against a hung test only; the server's deadline is what
	// ends the wait.
	conn.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(conn, "PUT /v1/namespaces/a2/claims HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\nonly ten b", token)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server never cut the stalled upload off")
	}
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			t.Fatalf("a stalled upload was stored: %s", resp.Status)
		}
	}
	// Either an error answer or a closed connection: the put ended.
	ns, err := b.meta.Namespace(context.Background(), "a2")
	if err != nil {
		t.Fatal(err)
	}
	if ns.ActiveClaims != 0 || ns.PendingClaims != 0 || ns.ReservedBytes != 0 {
		t.Fatalf("after a stalled upload: %+v, want nothing stored or reserved", ns)
	}
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
