package cli

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
)

// TestSubscriptionsAttemptsRetryReplay: `subscriptions attempts`, `retry`
// and `replay --since` reach the server; replay without --since is a
// usage error naming the flag; a subscription of no one is not found.
func TestSubscriptionsAttemptsRetryReplay(t *testing.T) {
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
	if _, stderr, code := cli("subscriptions", "create", "http://127.0.0.1:9/hook", "--id", "hook"); code != ExitOK {
		t.Fatalf("create: exit %d: %s", code, stderr)
	}
	if out, stderr, code := cli("subscriptions", "attempts", "hook"); code != ExitOK || !strings.HasPrefix(out, "SEQ") ||
		strings.Count(out, "\n") != 1 {
		t.Errorf("attempts: exit %d, %q, %s; want the header only", code, out, stderr)
	}
	if out, stderr, code := cli("subscriptions", "retry", "hook"); code != ExitOK || out != "retried: 0\n" {
		t.Errorf("retry: exit %d, %q, %s", code, out, stderr)
	}
	if out, stderr, code := cli("subscriptions", "replay", "hook", "--since", "1970-01-01T00:00:01Z"); code != ExitOK ||
		out != "cursor: 999999999\n" {
		t.Errorf("replay: exit %d, %q, %s", code, out, stderr)
	}
	if _, stderr, code := cli("subscriptions", "replay", "hook"); code != ExitUsage || !strings.Contains(stderr, "--since") {
		t.Errorf("replay without --since: exit %d, %s; want a usage error naming --since", code, stderr)
	}
	if _, stderr, code := cli("subscriptions", "retry", "nosuch"); code == ExitOK || !strings.Contains(stderr, "not") {
		t.Errorf("retry of no subscription: exit %d, %s", code, stderr)
	}
}
