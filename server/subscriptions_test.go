package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

func setupSubscriptions(t *testing.T) *authBundle {
	return setupAuthWith(t, server.Limits{}, func(c *engine.Config) {
		c.Subscriptions.AllowLoopback = true
		c.Subscriptions.Settle = 20 * time.Millisecond
	})
}

// TestSubscriptionsOverHTTP: subscriptions belong to the admin key's
// tenant; their secrets are answered once; another tenant cannot see or
// remove them.
func TestSubscriptionsOverHTTP(t *testing.T) {
	b := setupSubscriptions(t)
	acme := b.key(t, "acme", auth.RoleAdmin, "")
	beta := b.key(t, "beta", auth.RoleAdmin, "")
	producer := b.key(t, "acme", auth.RoleProducer, "a1")
	json := func(s string) []string { return []string{"Content-Type", "application/json"} }

	resp, body := b.do(t, acme, http.MethodPost, "/v1/subscriptions",
		strings.NewReader(`{"id":"ops","url":"http://127.0.0.1:9/hook","types":["all_released","expired_unread"]}`), json("")...)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), `"secret":"whsec_`) {
		t.Fatalf("create: %s %s", resp.Status, body)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"url":"http://10.0.0.1/"}`, "private"},
		{`{"url":"ftp://x/"}`, "http or https"},
		{`{"url":"http://127.0.0.1/","types":["nope"]}`, `unknown event type \"nope\"`},
		{`{"url":"http://127.0.0.1/","colour":"red"}`, "colour"},
	} {
		resp, body := b.do(t, acme, http.MethodPost, "/v1/subscriptions", strings.NewReader(tc.body), json("")...)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %s %s, want 400 saying %s", tc.body, resp.Status, body, tc.want)
		}
	}
	// Past the bound the server names the field and the limit.
	resp, body = b.do(t, acme, http.MethodPost, "/v1/subscriptions",
		strings.NewReader(`{"url":"http://127.0.0.1:9/hook","events_per_request":1001}`), json("")...)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "events_per_request: 1001") || !strings.Contains(string(body), "1000") {
		t.Errorf("events_per_request 1001: %s %s, want 400 naming the field and the limit 1000", resp.Status, body)
	}
	resp, body = b.do(t, acme, http.MethodPost, "/v1/subscriptions",
		strings.NewReader(`{"id":"bulk","url":"http://127.0.0.1:9/hook","events_per_request":50}`), json("")...)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), `"events_per_request":50`) {
		t.Fatalf("create with events_per_request 50: %s %s", resp.Status, body)
	}
	resp, body = b.do(t, acme, http.MethodGet, "/v1/subscriptions", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"events_per_request":50`) {
		t.Errorf("list: %s %s, want bulk's events_per_request 50", resp.Status, body)
	}
	if resp, body := b.do(t, producer, http.MethodGet, "/v1/subscriptions", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a producer key lists: %s %s", resp.Status, body)
	}
	resp, body = b.do(t, acme, http.MethodGet, "/v1/subscriptions", nil)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "whsec_") || !strings.Contains(string(body), `"id":"ops"`) {
		t.Errorf("list: %s %s (secrets are never listed)", resp.Status, body)
	}
	resp, body = b.do(t, beta, http.MethodGet, "/v1/subscriptions", nil)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "ops") {
		t.Errorf("another tenant lists: %s %s", resp.Status, body)
	}
	if resp, body := b.do(t, beta, http.MethodDelete, "/v1/subscriptions/ops", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another tenant deletes: %s %s", resp.Status, body)
	}
	if resp, body := b.do(t, acme, http.MethodDelete, "/v1/subscriptions/ops", nil); resp.StatusCode != http.StatusNoContent {
		t.Errorf("delete: %s %s", resp.Status, body)
	}
}

// sse reads one Server-Sent Events stream.
type sse struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func openStream(t *testing.T, b *authBundle, token, query, lastID string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.http.URL+"/v1/events/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set(api.HeaderLastEvent, lastID)
	}
	resp, err := b.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %s %s %s", resp.Status, resp.Header.Get("Content-Type"), msg)
	}
	return &sse{resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next returns the next event's id and data.
func (s *sse) next(t *testing.T) (string, claimcheck.Event) {
	t.Helper()
	var id, data string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && data != "":
			var e claimcheck.Event
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatal(err)
			}
			return id, e
		}
	}
	t.Fatalf("stream ended: %v", s.sc.Err())
	return "", claimcheck.Event{}
}

// TestEventStreamResumes: the stream carries the key's tenant's events
// only, and a client that reconnects with Last-Event-ID gets the events
// after that one, none missed and none again.
func TestEventStreamResumes(t *testing.T) {
	b := setupSubscriptions(t)
	acme := b.key(t, "acme", auth.RoleAdmin, "")
	s := openStream(t, b, acme, "?type=created", "")
	first := b.claim(t, "a1")
	b.claim(t, "b1") // beta's: never on acme's stream
	id, e := s.next(t)
	if e.ClaimID != first.ID || e.Kind != "created" || e.Tenant != "acme" {
		t.Fatalf("first event %s: %+v, want created of %s", id, e, first.ID)
	}
	s.resp.Body.Close()

	// While nobody listens: two more claims, one of them beta's.
	b.claim(t, "b1")
	second := b.claim(t, "a2")
	s = openStream(t, b, acme, "?type=created", id)
	_, e = s.next(t)
	if e.ClaimID != second.ID {
		t.Fatalf("after Last-Event-ID %s: %+v, want created of %s", id, e, second.ID)
	}

	resp, body := b.do(t, acme, http.MethodGet, "/v1/events/stream?type=created", nil, api.HeaderLastEvent, "yesterday")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Last-Event-ID") {
		t.Errorf("a bad Last-Event-ID: %s %s", resp.Status, body)
	}
}
