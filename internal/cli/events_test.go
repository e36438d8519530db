package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
)

func TestEventsCommand(t *testing.T) {
	ctx := context.Background()
	store := enginetest.Open(t, engine.Config{})
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	t.Cleanup(srv.Close)
	ref, err := store.Put(claimcheck.WithActor(ctx, "key-1"), "orders", strings.NewReader("payload"), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	refJSON, _ := json.Marshal(ref)

	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Main(ctx, append(args, "--server", srv.URL), Env{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		})
		return out.String(), errb.String(), code
	}
	kinds := func(out string) []string {
		var ks []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var e claimcheck.Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			ks = append(ks, e.Kind+"/"+e.Actor)
		}
		return ks
	}
	for _, args := range [][]string{{"events", string(refJSON)}, {"events", ref.ID}, {"events", "--ns", "orders", "--since", "1h"}} {
		out, stderr, code := cli(args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if got := kinds(out); len(got) != 2 || got[0] != "created/key-1" || got[1] != "deleted/" {
			t.Errorf("%v: events %q", args, got)
		}
	}
	if _, _, code := cli("events", ref.ID, "--ns", "other"); code != ExitNotFound {
		t.Errorf("events with another namespace: exit %d, want %d", code, ExitNotFound)
	}
	if _, _, code := cli("events"); code != ExitUsage {
		t.Errorf("events without a reference or --ns: exit %d, want %d", code, ExitUsage)
	}
	if _, _, code := cli("events", "--ns", "orders", "--since", "last week"); code != ExitUsage {
		t.Errorf("bad --since: exit %d, want %d", code, ExitUsage)
	}
	if got, err := parseSince("90m", time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)); err != nil || !got.Equal(time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC)) {
		t.Errorf("parseSince(90m) = %v, %v", got, err)
	}
}

// TestEventsFollowFromOldest: events --follow --after oldest prints the
// events the store already holds, from the oldest (ADR 0273); a bad
// --after is a usage error naming it.
func TestEventsFollowFromOldest(t *testing.T) {
	store := enginetest.Open(t, engine.Config{Subscriptions: dispatch.Config{Settle: 10 * time.Millisecond}})
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	t.Cleanup(srv.Close)
	ref, err := store.Put(context.Background(), "orders", strings.NewReader("payload"), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // past the settle time: the event is in the stream's past
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := &firstLine{cancel: cancel}
	var errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: &errb,
		Getenv: func(string) string { return "" }, Environ: func() []string { return nil }}
	if code := Main(ctx, []string{"events", "--follow", "--type", "created", "--after", "oldest", "--server", srv.URL}, env); code != ExitOK {
		t.Fatalf("events --follow --after oldest: exit %d: %s", code, errb.String())
	}
	var e claimcheck.Event
	if err := json.Unmarshal(out.buf.Bytes(), &e); err != nil || e.ClaimID != ref.ID {
		t.Fatalf("first event %q (%v), want created of %s", out.buf.String(), err, ref.ID)
	}
	if code := Main(context.Background(), []string{"events", "--follow", "--after", "yesterday", "--server", srv.URL}, env); code != ExitUsage ||
		!strings.Contains(errb.String(), `--after "yesterday"`) {
		t.Errorf("--after yesterday: exit %d: %s, want a usage error naming --after", code, errb.String())
	}
}

// firstLine keeps what is written to it and cancels when it has a line.
type firstLine struct {
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (f *firstLine) Write(p []byte) (int, error) {
	n, err := f.buf.Write(p)
	if bytes.Contains(f.buf.Bytes(), []byte("\n")) {
		f.cancel()
	}
	return n, err
}
