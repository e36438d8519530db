package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// TestEventStreamEndsOnShutdown: a server shutting down with an event
// stream open ends the stream at once with a shutdown message that
// carries a retry hint and no id (the client's Last-Event-ID stays its
// resume point), and Serve returns nil: a clean exit, not the requests
// cut off after ShutdownTimeout.
func TestEventStreamEndsOnShutdown(t *testing.T) {
	b := setupSubscriptions(t)
	acme := b.key(t, "acme", auth.RoleAdmin, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, ln, b.http.Config.Handler, slog.New(slog.NewTextHandler(t.Output(), nil)))
	}()
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/v1/events/stream?type=created", nil)
	req.Header.Set("Authorization", "Bearer "+acme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %s", resp.Status)
	}
	s := &sse{resp: resp, sc: bufio.NewScanner(resp.Body)}
	ref := b.claim(t, "a1")
	id, e := s.next(t)
	if e.ClaimID != ref.ID {
		t.Fatalf("event %s: %+v, want created of %s", id, e, ref.ID)
	}

	cancel()
	rest, err := io.ReadAll(resp.Body) // ends when the server closes the stream
	if err != nil {
		t.Fatalf("the rest of the stream: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve with a stream open: %v, want a clean shutdown", err)
	}
	msg := string(rest)
	if !strings.Contains(msg, "event: shutdown\n") || !strings.Contains(msg, "retry: ") || strings.Contains(msg, "id:") {
		t.Errorf("the stream's last message: %q, want event: shutdown with a retry hint and no id", msg)
	}
}

// TestEventStreamStart: where a stream begins. No id and id 0 are from
// now; "oldest" is from the oldest retained event; an id past the newest
// event is 400 and one before the retention bound 410, each naming how
// it was given, instead of a stream that stays silent.
func TestEventStreamStart(t *testing.T) {
	b := setupSubscriptions(t)
	acme := b.key(t, "acme", auth.RoleAdmin, "")
	before := b.claim(t, "a1")
	time.Sleep(50 * time.Millisecond) // past the settle time (20ms): the event is in the stream's past

	s := openStream(t, b, acme, "?type=created", api.StreamOldest)
	if _, e := s.next(t); e.ClaimID != before.ID {
		t.Fatalf("from oldest: %+v, want created of %s", e, before.ID)
	}
	s = openStream(t, b, acme, "?type=created&last_event_id=oldest", "")
	if _, e := s.next(t); e.ClaimID != before.ID {
		t.Fatalf("from last_event_id=oldest: %+v, want created of %s", e, before.ID)
	}
	for _, id := range []string{"", "0"} {
		s := openStream(t, b, acme, "?type=created", id)
		after := b.claim(t, "a1")
		if _, e := s.next(t); e.ClaimID != after.ID {
			t.Fatalf("Last-Event-ID %q: %+v, want created of %s (from now)", id, e, after.ID)
		}
	}

	future := strconv.FormatInt(time.Now().Add(time.Hour).UnixNano(), 10)
	for _, tc := range []struct {
		header, query string
		status        int
		want          string
	}{
		{future, "", http.StatusBadRequest, "Last-Event-ID header: event " + future + " is past the newest event"},
		{"", future, http.StatusBadRequest, "query parameter last_event_id: event " + future + " is past the newest event"},
		{"5", "", http.StatusGone, "Last-Event-ID header: event 5 is before the retention bound"},
	} {
		path := "/v1/events/stream"
		if tc.query != "" {
			path += "?last_event_id=" + tc.query
		}
		var hdr []string
		if tc.header != "" {
			hdr = []string{api.HeaderLastEvent, tc.header}
		}
		resp, body := b.do(t, acme, http.MethodGet, path, nil, hdr...)
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %v: %s %s, want %d saying %q", path, hdr, resp.Status, body, tc.status, tc.want)
		}
	}
}

// TestSeqIsJSONString: sequence numbers are JSON strings (a 19-digit
// number is past what a JavaScript number holds exactly): the stream's
// data.seq and an events page's seq and next.
func TestSeqIsJSONString(t *testing.T) {
	b := setupSubscriptions(t)
	acme := b.key(t, "acme", auth.RoleAdmin, "")
	s := openStream(t, b, acme, "?type=created", "")
	ref := b.claim(t, "a1")
	b.claim(t, "a1")
	var id, data string
	for s.sc.Scan() {
		line := s.sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = v
			break
		}
	}
	if !strings.Contains(data, fmt.Sprintf(`"seq":"%s"`, id)) {
		t.Errorf("stream data %s: want \"seq\":\"%s\" (a string)", data, id)
	}
	resp, body := b.do(t, acme, http.MethodGet, "/v1/namespaces/a1/events?limit=1", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"seq":"`) || !strings.Contains(string(body), `"next":"`) {
		t.Errorf("events page: %s %s, want seq and next as strings", resp.Status, body)
	}
	_ = ref
}
