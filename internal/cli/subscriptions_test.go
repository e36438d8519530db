package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
)

// TestSubscriptionsEventsPerRequest: `subscriptions create
// --events-per-request N` makes a subscription in the batched mode, `ls`
// shows it, and a value past the bound is a usage error naming the flag
// and the limit.
func TestSubscriptionsEventsPerRequest(t *testing.T) {
	ctx := context.Background()
	cfg := engine.Config{Data: t.TempDir()}
	cfg.Subscriptions.AllowLoopback = true
	cfg.Sweeper.Disabled = true
	store := enginetest.Open(t, cfg)
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	t.Cleanup(srv.Close)
	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Main(ctx, append(args, "--server", srv.URL), Env{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		})
		return out.String(), errb.String(), code
	}

	for _, n := range []string{"1001", "-1"} {
		if _, stderr, code := cli("subscriptions", "create", "http://127.0.0.1:9/hook", "--events-per-request", n); code != ExitUsage ||
			!strings.Contains(stderr, "--events-per-request "+n) || !strings.Contains(stderr, "1000") {
			t.Errorf("--events-per-request %s: exit %d, %q; want a usage error naming the flag and the limit", n, code, stderr)
		}
	}
	if _, stderr, code := cli("subscriptions", "create", "http://127.0.0.1:9/hook", "--id", "bulk", "--events-per-request", "50"); code != ExitOK {
		t.Fatalf("create: exit %d: %s", code, stderr)
	}
	if _, stderr, code := cli("subscriptions", "create", "http://127.0.0.1:9/hook", "--id", "plain"); code != ExitOK {
		t.Fatalf("create: exit %d: %s", code, stderr)
	}
	out, stderr, code := cli("subscriptions", "ls", "--json")
	if code != ExitOK {
		t.Fatalf("ls: exit %d: %s", code, stderr)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s claimcheck.Subscription
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got[s.ID] = s.EventsPerRequest
	}
	if len(got) != 2 || got["bulk"] != 50 || got["plain"] != 0 {
		t.Errorf("ls --json: events_per_request %v, want bulk 50 and plain the default (0)", got)
	}
	out, _, _ = cli("subscriptions", "ls")
	for _, want := range []string{"PER REQUEST", "bulk", "50", "plain", "default"} {
		if !strings.Contains(out, want) {
			t.Errorf("ls: no %q in\n%s", want, out)
		}
	}
}
