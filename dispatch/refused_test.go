package dispatch_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/egress"
	"github.com/claimcheck/claimcheck/engine"
)

// TestLastErrorHidesTheResolvedAddress: a subscription to a name that
// resolves to loopback passes the check at create (a name), is refused
// at connect, and the last_error the tenant reads says so without the
// address the name resolved to (which would tell a tenant what the
// operator's internal names resolve to).
func TestLastErrorHidesTheResolvedAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the refused connection reached the server")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	e := setup(t, func(c *engine.Config) {
		c.Subscriptions.AllowLoopback = false
		c.Subscriptions.Resolver = loopbackResolver()
	})
	sub, err := e.store.CreateSubscription(context.Background(), claimcheck.DefaultTenant,
		claimcheck.SubscriptionSpec{URL: "http://receiver.test:" + port + "/hook"})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Millisecond)
	e.put(t, "orders", claimcheck.PutOptions{})
	e.clock.Advance(tick)
	var got claimcheck.Subscription
	waitState(t, e, func(s claimcheck.Subscription) bool {
		got = s
		return s.ID == sub.ID && s.Attempts > 0 && s.LastError != ""
	})
	if !strings.Contains(got.LastError, egress.RefusedText) {
		t.Errorf("last_error %q does not say the target was refused", got.LastError)
	}
	if strings.Contains(got.LastError, "127.0.0.1") || strings.Contains(got.LastError, "::1") {
		t.Errorf("last_error %q shows the address the name resolved to", got.LastError)
	}
}

// TestConfigTargetRefused: a target in the config is held to the same
// policy as one a tenant makes, and the refusal names its key.
func TestConfigTargetRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, says string }{
		{"http://[64:ff9b::a9fe:a9fe]/hook", "64:ff9b::/96"},
		{"http://0x7f000001:9/hook", "denotes 127.0.0.1"},
		{"http://hooks.example.com:181810000/hook", "port 181810000"},
	} {
		dir := t.TempDir()
		cfg := engine.Config{Data: dir, Metadata: "sqlite:" + filepath.Join(dir, "meta.db")}
		cfg.Sweeper.Disabled = true
		cfg.Subscriptions.Targets = []dispatch.Target{{ID: "ops", URL: tc.url, Secret: "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}}
		s, err := engine.Open(context.Background(), cfg)
		if err == nil {
			_ = s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "subscriptions.targets[0].url: ") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want a refusal naming subscriptions.targets[0].url and saying %q", tc.url, err, tc.says)
		}
	}
}

// loopbackResolver answers every A question with 127.0.0.1 and every
// other with no address, over an in-memory connection: no DNS server
// is asked anything.
func loopbackResolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go answerLoopback(server)
		return client, nil
	}}
}

// answerLoopback serves the questions of one stream connection (each
// message after its 2-byte length).
func answerLoopback(c net.Conn) {
	defer func() { _ = c.Close() }()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil || len(q) < 12 {
			return
		}
		end := 12 // the question: a name's labels, then type and class
		for end < len(q) && q[end] != 0 {
			end += int(q[end]) + 1
		}
		end += 5
		if end > len(q) {
			return
		}
		qtype := binary.BigEndian.Uint16(q[end-4:])
		msg := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, q[12:end]...)
		if qtype == 1 { // A
			msg[7] = 1
			msg = append(msg, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1)
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(msg)))
		if _, err := c.Write(append(out, msg...)); err != nil {
			return
		}
	}
}
