package cli

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/server"
)

// TestServeWarnsWithoutAuth: serve warns loudly, on stderr and in the
// log, when auth is off and the address is reachable from other
// machines, and stays quiet on loopback. (No test listens on a public
// address; the check is on the address serve would report.)
func TestServeWarnsWithoutAuth(t *testing.T) {
	for _, tc := range []struct {
		addr string
		warn bool
	}{
		{"0.0.0.0:8080", true},
		{"[::]:8080", true},
		{"192.0.2.10:8080", true},
		{"127.0.0.1:8080", false},
		{"[::1]:8080", false},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		var stderr, logs bytes.Buffer
		var cfg server.Config
		if err := secureServer(t.Context(), &cfg, nil, false, addr, &stderr, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(stderr.String(), "WARNING: authentication is OFF") && strings.Contains(logs.String(), "authentication is off")
		if warned != tc.warn {
			t.Errorf("%s: warned=%v, want %v; stderr %q", tc.addr, warned, tc.warn, stderr.String())
		}
		if cfg.Auth != nil {
			t.Errorf("%s: auth off must leave Config.Auth nil", tc.addr)
		}
	}
}

// TestServeRateLimitByAuth: serve's http.rate_limit left unset is the
// per-key default with auth on and no limit with auth off (ADR 0262); a
// value the operator sets holds either way, and a bad burst is refused
// naming the field.
func TestServeRateLimitByAuth(t *testing.T) {
	for _, tc := range []struct {
		auth bool
		set  float64
		want float64
	}{
		{true, 0, server.DefaultRateLimit},
		{false, 0, 0},
		{false, 50, 50},
		{true, 50, 50},
		{false, -1, 0},
	} {
		limits, _, err := httpConfig{Limits: server.Limits{RateLimit: tc.set}}.load(tc.auth)
		if err != nil || limits.RateLimit != tc.want {
			t.Errorf("auth %v, rate_limit %g: effective %g (%v), want %g", tc.auth, tc.set, limits.RateLimit, err, tc.want)
		}
	}
	// serve says at start why requests are not rate limited, and only
	// then.
	for _, rate := range []float64{0, 50} {
		var logs bytes.Buffer
		cfg := server.Config{Limits: server.Limits{RateLimit: rate}}
		addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
		if err := secureServer(t.Context(), &cfg, nil, false, addr, io.Discard, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
			t.Fatal(err)
		}
		if said := strings.Contains(logs.String(), "no per-address request rate limit") && strings.Contains(logs.String(), "http.rate_limit"); said != (rate == 0) {
			t.Errorf("rate_limit %g: start-up log %q", rate, logs.String())
		}
	}
	_, _, err := httpConfig{Limits: server.Limits{RateLimit: 10, RateBurst: -1}}.load(false)
	if err == nil || !strings.Contains(err.Error(), "http.rate_burst") {
		t.Errorf("rate_limit with burst off: %v, want an error naming http.rate_burst", err)
	}
}
