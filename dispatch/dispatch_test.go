package dispatch_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 9, 12, 0, 0, 0, time.UTC)

// receiver is a webhook receiver written from the two specifications:
// it verifies the Standard Webhooks signature itself (not with package
// dispatch) and parses the CloudEvents structured mode.
type receiver struct {
	t      *testing.T
	key    []byte
	url    string
	mu     sync.Mutex
	cond   *sync.Cond
	got    []dispatch.CloudEvent
	ids    []string
	tries  int
	status int           // answer while not 0 (a receiver that is down: 503)
	block  chan struct{} // non-nil: every request waits for it to close
	inside int           // requests being held by block
	bad    []string      // what failed verification
	cts    []string      // content type of every request taken
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.cond = sync.NewCond(&r.mu)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hook"
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.tries++
	block, status := r.block, r.status
	if block != nil {
		r.inside++
	}
	r.cond.Broadcast()
	r.mu.Unlock()
	if block != nil {
		<-block
	}
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.cond.Broadcast()
	// Standard Webhooks: signed content is id "." timestamp "." body,
	// HMAC-SHA256 under the base64-decoded part of the secret after
	// "whsec_", sent as "v1," and the base64 of the MAC.
	id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
	mac := hmac.New(sha256.New, r.key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if !slices.Contains(strings.Fields(req.Header.Get("webhook-signature")), want) {
		r.bad = append(r.bad, "signature of "+id)
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		r.bad = append(r.bad, "timestamp "+ts)
	}
	var ces []dispatch.CloudEvent
	ct := req.Header.Get("Content-Type")
	r.cts = append(r.cts, ct)
	switch ct {
	case "application/cloudevents+json":
		var ce dispatch.CloudEvent
		if err := json.Unmarshal(body, &ce); err != nil || ce.ID != id {
			r.bad = append(r.bad, "cloud event "+string(body))
		}
		ces = append(ces, ce)
	case "application/cloudevents-batch+json":
		// The batched mode: an array; the webhook-id names its first
		// and last events.
		if err := json.Unmarshal(body, &ces); err != nil || len(ces) == 0 {
			r.bad = append(r.bad, "cloud event batch "+string(body))
		} else if want := ces[0].ID + "-" + ces[len(ces)-1].ID; id != want && (len(ces) > 1 || id != ces[0].ID) {
			r.bad = append(r.bad, "webhook-id "+id+" of a batch "+want)
		}
	default:
		r.bad = append(r.bad, "content type "+ct)
	}
	for _, ce := range ces {
		if ce.SpecVersion != "1.0" || ce.Source == "" || ce.Type == "" {
			r.bad = append(r.bad, "cloud event "+ce.ID)
		}
		r.got = append(r.got, ce)
		r.ids = append(r.ids, ce.ID)
	}
	w.WriteHeader(http.StatusNoContent)
}

// wait waits until cond holds of the receiver (under its lock).
func (r *receiver) wait(what string, cond func() bool) {
	r.t.Helper()
	timer := time.AfterFunc(20*time.Second, func() {
		r.mu.Lock()
		r.bad = append(r.bad, "timed out waiting for "+what)
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for !cond() {
		if slices.ContainsFunc(r.bad, func(s string) bool { return strings.HasPrefix(s, "timed out") }) {
			r.t.Fatalf("%s: received %d events, %d tries; problems: %v", what, len(r.got), r.tries, r.bad)
		}
		r.cond.Wait()
	}
}

// kinds returns the received kinds per claim, in arrival order.
func (r *receiver) kinds() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for _, ce := range r.got {
		out[ce.Subject] = append(out[ce.Subject], ce.Data.Kind)
	}
	return out
}

func (r *receiver) check() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		r.t.Fatalf("receiver: %v", r.bad)
	}
}

type env struct {
	store *engine.Store
	clock *clock.Fake
}

// tick is how far the tests move the fake clock so that events are
// past the settle time.
const tick = time.Second

// backends are the metadata stores the delivery tests run on; PostgreSQL
// where TEST_DATABASE_URL names one (testsvc skips without it).
var backends = []string{"sqlite", "postgres"}

func setup(t *testing.T, mod func(*engine.Config)) *env {
	return setupOn(t, "sqlite", mod)
}

func setupOn(t *testing.T, backend string, mod func(*engine.Config)) *env {
	t.Helper()
	clk := clock.NewFake(t0)
	dir := t.TempDir()
	metadata := "sqlite:" + filepath.Join(dir, "meta.db")
	if backend == "postgres" {
		metadata, _ = testsvc.Postgres(t)
	}
	cfg := engine.Config{
		Data: dir, Metadata: metadata, Storage: "file://" + filepath.ToSlash(filepath.Join(dir, "blobs")),
		Clock: clk, Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
		Namespaces: map[string]claimcheck.Policy{
			"orders": {TTL: claimcheck.TTLPolicy{MaxLifetime: claimcheck.Duration(48 * time.Hour)}}, "audit": {},
			"other": {Tenant: "acme"},
		},
		Tenants: map[string]claimcheck.TenantPolicy{"acme": {}},
	}
	// The tests sweep by hand (SweepOnce), so that the fake clock's jumps
	// do not start a background run beside it.
	cfg.Sweeper.Disabled = true
	cfg.Subscriptions.AllowLoopback = true
	cfg.Subscriptions.Interval = 5 * time.Millisecond
	cfg.Subscriptions.Settle = 100 * time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	s := enginetest.Open(t, cfg)
	return &env{store: s, clock: clk}
}

func (e *env) subscribe(t *testing.T, tenant string, r *receiver, f claimcheck.EventFilter) claimcheck.Subscription {
	t.Helper()
	sub, err := e.store.CreateSubscription(context.Background(), tenant, claimcheck.SubscriptionSpec{URL: r.url, EventFilter: f})
	if err != nil {
		t.Fatal(err)
	}
	if r.key, err = base64.StdEncoding.DecodeString(strings.TrimPrefix(sub.Secret, "whsec_")); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Millisecond) // events after the subscription's start
	return sub
}

func (e *env) put(t *testing.T, ns string, opts claimcheck.PutOptions) claimcheck.Ref {
	t.Helper()
	ref, err := e.store.Put(context.Background(), ns, bytes.NewReader(bytes.Repeat([]byte("x"), 1024)), opts)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestEveryClaimEventArrivesSigned(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testEveryClaimEvent(t, setupOn(t, backend, nil))
		})
	}
}

// In the batched mode every event arrives as in the structured one, in
// the same order per claim, under a signature over the whole array.
func TestEveryClaimEventArrivesBatched(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testEveryClaimEvent(t, setupOn(t, backend, func(c *engine.Config) { c.Subscriptions.EventsPerRequest = 5 }))
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.tries >= len(r.got) {
				t.Errorf("%d requests for %d events: none carried more than one", r.tries, len(r.got))
			}
		})
	}
}

// Each subscription is delivered in the mode it chose: on one server
// whose default is one event per request, a subscription created with
// events_per_request 50 gets batched CloudEvents, one without gets
// structured single events, and both get every event.
func TestModeIsPerSubscription(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := setupOn(t, backend, nil)
			ctx := context.Background()
			batched, single := newReceiver(t), newReceiver(t)
			sub, err := e.store.CreateSubscription(ctx, claimcheck.DefaultTenant, claimcheck.SubscriptionSpec{URL: batched.url, EventsPerRequest: 50})
			if err != nil {
				t.Fatal(err)
			}
			if sub.EventsPerRequest != 50 {
				t.Errorf("created: events_per_request %d, want 50", sub.EventsPerRequest)
			}
			if batched.key, err = base64.StdEncoding.DecodeString(strings.TrimPrefix(sub.Secret, "whsec_")); err != nil {
				t.Fatal(err)
			}
			e.subscribe(t, claimcheck.DefaultTenant, single, claimcheck.EventFilter{})
			list, err := e.store.Subscriptions(ctx, claimcheck.DefaultTenant)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range list {
				if want := map[bool]int{true: 50, false: 0}[l.ID == sub.ID]; l.EventsPerRequest != want {
					t.Errorf("listed %s: events_per_request %d, want %d", l.ID, l.EventsPerRequest, want)
				}
			}
			// Twenty claims' events settle together, so one round holds
			// them all and the batched lanes carry several per request.
			const n = 20
			for range n {
				e.put(t, "orders", claimcheck.PutOptions{})
			}
			e.clock.Advance(tick)
			for _, r := range []*receiver{batched, single} {
				r.wait("every event", func() bool {
					seen := map[string]bool{}
					for _, id := range r.ids {
						seen[id] = true
					}
					return len(seen) >= n
				})
				r.check()
			}
			batched.mu.Lock()
			defer batched.mu.Unlock()
			for _, ct := range batched.cts {
				if ct != "application/cloudevents-batch+json" {
					t.Errorf("the batched subscription got a request of %s", ct)
				}
			}
			if batched.tries >= len(batched.got) {
				t.Errorf("batched: %d requests for %d events: none carried more than one", batched.tries, len(batched.got))
			}
			single.mu.Lock()
			defer single.mu.Unlock()
			for _, ct := range single.cts {
				if ct != "application/cloudevents+json" {
					t.Errorf("the default subscription got a request of %s", ct)
				}
			}
		})
	}
}

func testEveryClaimEvent(t *testing.T, e *env) *receiver {
	r := newReceiver(t)
	e.subscribe(t, claimcheck.DefaultTenant, r, claimcheck.EventFilter{})
	ctx := context.Background()

	fanout := e.put(t, "orders", claimcheck.PutOptions{Consumers: 2})
	p, err := e.store.Redeem(ctx, fanout)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, p)
	_ = p.Close()
	if _, err := e.store.Stat(ctx, fanout); err != nil { // waits for the read receipts
		t.Fatal(err)
	}
	for _, c := range []string{"a", "b"} {
		if err := e.store.Release(ctx, fanout, c); err != nil {
			t.Fatal(err)
		}
	}
	deleted := e.put(t, "orders", claimcheck.PutOptions{})
	if _, err := e.store.Extend(ctx, deleted, claimcheck.ExtendOptions{By: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	unread := e.put(t, "orders", claimcheck.PutOptions{})
	up, err := e.store.StartResumable(ctx, "orders", claimcheck.ResumableRequest{Size: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if up, err = e.store.AppendResumable(ctx, up.ID, 0, bytes.NewReader(bytes.Repeat([]byte("u"), 1024)), claimcheck.ChunkChecksum{}); err != nil || up.Ref == nil {
		t.Fatalf("resumable upload: ref %v, %v", up.Ref, err)
	}
	uploaded := *up.Ref
	e.clock.Advance(25 * time.Hour) // past the default max_age of 24h
	if _, err := e.store.SweepOnce(ctx, 0); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(tick)

	want := map[string][]string{
		// Released by every consumer, it is finished at once
		// (retention_after_read 0) when the sweeper comes by.
		fanout.ID:   {"created", "redeemed", "first_redeemed", "released", "released", "all_released", "deleted"},
		deleted.ID:  {"created", "extended", "deleted"},
		unread.ID:   {"created", "expired", "expired_unread"},
		uploaded.ID: {"created", "confirmed", "expired", "expired_unread"},
	}
	// At least once: a receiver drops ids it has seen (events a round
	// had in flight may come again), so kinds are counted by distinct
	// event id, in the order first received.
	distinct := func() map[string][]string {
		out, seen := map[string][]string{}, map[string]bool{}
		for _, ce := range r.got {
			if !seen[ce.ID] {
				seen[ce.ID] = true
				out[ce.Subject] = append(out[ce.Subject], ce.Data.Kind)
			}
		}
		return out
	}
	r.wait("every event", func() bool {
		n := 0
		for id, kinds := range distinct() {
			if _, ok := want[id]; ok {
				n += len(kinds)
			}
		}
		return n >= 17
	})
	r.check()
	r.mu.Lock()
	got := distinct()
	r.mu.Unlock()
	for id, kinds := range want {
		if !slices.Equal(got[id], kinds) {
			t.Errorf("claim %s: got %v, want %v in this order", id, got[id], kinds)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("events of an unknown subject %q", id)
		}
	}
	return r
}

func TestReceiverDownThenBack(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testReceiverDownThenBack(t, setupOn(t, backend, func(c *engine.Config) { c.Subscriptions.Concurrency = 3 }))
		})
	}
}

func testReceiverDownThenBack(t *testing.T, e *env) {
	r := newReceiver(t)
	r.status = http.StatusServiceUnavailable
	sub := e.subscribe(t, claimcheck.DefaultTenant, r, claimcheck.EventFilter{Types: []string{"created", "deleted"}})
	ctx := context.Background()
	var refs []claimcheck.Ref
	for range 20 {
		ref := e.put(t, "orders", claimcheck.PutOptions{})
		if err := e.store.Delete(ctx, ref); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	e.clock.Advance(tick)
	r.wait("a refused delivery", func() bool { return r.tries > 0 })
	// The failure is on the subscription, for an operator to see.
	waitState(t, e, func(s claimcheck.Subscription) bool { return s.ID == sub.ID && s.Attempts > 0 && s.LastError != "" })
	// A receiver that takes nothing holds the cursor: nothing is parked
	// (ADR 0277).
	if a := attempts(t, e, sub.ID); len(a) != 0 {
		t.Errorf("a receiver that is down: %d events parked, want none", len(a))
	}

	r.mu.Lock()
	r.status = 0
	r.mu.Unlock()
	e.clock.Advance(10 * time.Minute) // past any backoff
	r.wait("all 40 events", func() bool { return len(r.got) >= 40 })
	r.check()
	got := r.kinds()
	for _, ref := range refs {
		if !slices.Equal(got[ref.ID], []string{"created", "deleted"}) {
			t.Errorf("claim %s: got %v, want created then deleted, once each", ref.ID, got[ref.ID])
		}
	}
	waitState(t, e, func(s claimcheck.Subscription) bool { return s.Attempts == 0 && s.Delivered == 40 })
}

func waitState(t *testing.T, e *env, ok func(claimcheck.Subscription) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		subs, err := e.store.Subscriptions(context.Background(), claimcheck.DefaultTenant)
		if err != nil {
			t.Fatal(err)
		}
		if len(subs) == 1 && ok(subs[0]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscription never reached the state: %+v", subs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSlowReceiverDoesNotHoldPuts(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	r := newReceiver(t)
	r.block = make(chan struct{})
	e.subscribe(t, claimcheck.DefaultTenant, r, claimcheck.EventFilter{Types: []string{"created"}})
	e.put(t, "orders", claimcheck.PutOptions{})
	e.clock.Advance(tick)
	r.wait("a delivery held by the receiver", func() bool { return r.inside > 0 })
	// The receiver holds a delivery: puts complete all the same.
	for range 50 {
		e.put(t, "orders", claimcheck.PutOptions{})
	}
	close(r.block)
	e.clock.Advance(tick)
	r.wait("51 events", func() bool { return len(r.got) >= 51 })
	r.check()
}

func TestTenantsSeeOnlyTheirEvents(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	def, acme := newReceiver(t), newReceiver(t)
	e.subscribe(t, claimcheck.DefaultTenant, def, claimcheck.EventFilter{})
	e.subscribe(t, "acme", acme, claimcheck.EventFilter{Types: []string{"created"}})
	// A filter naming another tenant's namespace selects nothing of it.
	spy := newReceiver(t)
	e.subscribe(t, claimcheck.DefaultTenant, spy, claimcheck.EventFilter{Namespaces: []string{"other"}})
	mine := e.put(t, "orders", claimcheck.PutOptions{})
	theirs := e.put(t, "other", claimcheck.PutOptions{})
	e.clock.Advance(tick)
	def.wait("default's event", func() bool { return len(def.got) >= 1 })
	acme.wait("acme's event", func() bool { return len(acme.got) >= 1 })
	// One more event of each tenant after the first: when it arrives, an
	// event of the wrong tenant would have arrived before it.
	e.clock.Advance(tick)
	if got := def.kinds(); len(got[theirs.ID]) > 0 || len(got[mine.ID]) != 1 {
		t.Errorf("default tenant received %v", got)
	}
	if got := acme.kinds(); len(got[mine.ID]) > 0 || len(got[theirs.ID]) != 1 {
		t.Errorf("acme received %v", got)
	}
	spy.mu.Lock()
	n := spy.tries
	spy.mu.Unlock()
	if n != 0 {
		t.Errorf("a subscription of the default tenant received %d events of acme's namespace", n)
	}
	def.check()
	acme.check()
}

func TestTargetPolicy(t *testing.T) {
	t.Parallel()
	var strict dispatch.TargetPolicy
	for _, u := range []string{
		"ftp://example.com/x", "http://127.0.0.1/x", "http://localhost:8080/", "http://[::1]/", "http://10.1.2.3/",
		"http://169.254.169.254/latest/meta-data", "http://192.168.0.1/", "http://[fe80::1]/", "http://user:pw@example.com/",
		"http:///nohost",
	} {
		if err := strict.CheckURL("url", u); err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
	if err := strict.CheckURL("url", "https://hooks.example.com/claimcheck"); err != nil {
		t.Errorf("a public name: %v", err)
	}
	// A name is checked where it connects: localhost resolves to
	// loopback, which the connection refuses, whatever the URL said.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the refused connection reached the server")
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	_, err := strict.Client(time.Second).Get("http://localhost:" + port + "/")
	if !errors.Is(err, dispatch.ErrTargetRefused) {
		t.Errorf("connection to localhost: %v, want %v", err, dispatch.ErrTargetRefused)
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	r := newReceiver(t)
	redirect := httptest.NewServer(http.RedirectHandler(r.url, http.StatusTemporaryRedirect))
	defer redirect.Close()
	sub, err := e.store.CreateSubscription(context.Background(), claimcheck.DefaultTenant, claimcheck.SubscriptionSpec{URL: redirect.URL})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Millisecond)
	e.put(t, "orders", claimcheck.PutOptions{})
	e.clock.Advance(tick)
	waitState(t, e, func(s claimcheck.Subscription) bool {
		return s.ID == sub.ID && s.Attempts > 0 && strings.Contains(s.LastError, "307")
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tries != 0 {
		t.Errorf("the redirect was followed: %d requests reached its target", r.tries)
	}
}

func TestSubscriptionInput(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		spec claimcheck.SubscriptionSpec
		want string
	}{
		{claimcheck.SubscriptionSpec{}, "url: required"},
		{claimcheck.SubscriptionSpec{URL: "gopher://x"}, "scheme must be http or https"},
		{claimcheck.SubscriptionSpec{URL: "http://127.0.0.1/", EventFilter: claimcheck.EventFilter{Types: []string{"creatd"}}}, `unknown event type "creatd"`},
		{claimcheck.SubscriptionSpec{URL: "http://127.0.0.1/", Secret: "hunter2"}, "secret: want \"whsec_\""},
		{claimcheck.SubscriptionSpec{URL: "http://127.0.0.1/", ID: "no spaces"}, "id:"},
		{claimcheck.SubscriptionSpec{URL: "http://127.0.0.1/", EventsPerRequest: 1001}, "events_per_request: 1001: from 1 (one CloudEvent per request) to 1000"},
		{claimcheck.SubscriptionSpec{URL: "http://127.0.0.1/", EventsPerRequest: -1}, "events_per_request: -1"},
	} {
		_, err := e.store.CreateSubscription(ctx, claimcheck.DefaultTenant, tc.spec)
		if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want invalid argument saying %q", tc.spec, err, tc.want)
		}
	}
	sub, err := e.store.CreateSubscription(ctx, claimcheck.DefaultTenant, claimcheck.SubscriptionSpec{ID: "one", URL: "http://127.0.0.1/"})
	if err != nil || !strings.HasPrefix(sub.Secret, "whsec_") {
		t.Fatalf("create: %+v, %v", sub, err)
	}
	if _, err := e.store.CreateSubscription(ctx, claimcheck.DefaultTenant, claimcheck.SubscriptionSpec{ID: "one", URL: "http://127.0.0.1/"}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("a taken id: %v", err)
	}
	list, err := e.store.Subscriptions(ctx, claimcheck.DefaultTenant)
	if err != nil || len(list) != 1 || list[0].Secret != "" {
		t.Errorf("list: %+v, %v (the secret is never listed)", list, err)
	}
	if err := e.store.DeleteSubscription(ctx, "acme", "one"); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("another tenant's delete: %v, want not found", err)
	}
	if err := e.store.DeleteSubscription(ctx, claimcheck.DefaultTenant, "one"); err != nil {
		t.Error(err)
	}
}

// A filter naming labels selects the events of the claims that carry
// them (the feed reads the claims' labels only for such a filter);
// beside it, a subscription without labels gets every event.
func TestLabelFilter(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	billing, all := newReceiver(t), newReceiver(t)
	e.subscribe(t, claimcheck.DefaultTenant, billing, claimcheck.EventFilter{Labels: map[string]string{"team": "billing"}})
	e.subscribe(t, claimcheck.DefaultTenant, all, claimcheck.EventFilter{})
	theirs := e.put(t, "orders", claimcheck.PutOptions{Labels: map[string]string{"team": "billing", "run": "1"}})
	other := e.put(t, "orders", claimcheck.PutOptions{Labels: map[string]string{"team": "ops"}})
	plain := e.put(t, "orders", claimcheck.PutOptions{})
	e.clock.Advance(tick)
	all.wait("every claim's event", func() bool { return len(all.got) >= 3 })
	billing.wait("the labelled claim's event", func() bool { return len(billing.got) >= 1 })
	e.clock.Advance(tick)
	if got := billing.kinds(); len(got) != 1 || len(got[theirs.ID]) != 1 {
		t.Errorf("the billing subscription received %v, want only %s's event", got, theirs.ID)
	}
	if got := all.kinds(); len(got[theirs.ID]) != 1 || len(got[other.ID]) != 1 || len(got[plain.ID]) != 1 {
		t.Errorf("the subscription without labels received %v", got)
	}
	billing.check()
	all.check()
}

// An operator's target chooses its mode in the config like a
// subscription at create; past the bound the config is refused, naming
// the target's field.
func TestConfigTargetMode(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	e := setup(t, func(c *engine.Config) {
		c.Subscriptions.Targets = []dispatch.Target{{ID: "ops", URL: "http://127.0.0.1:9/hook", Secret: secret, EventsPerRequest: 50}}
	})
	list, err := e.store.Subscriptions(context.Background(), claimcheck.DefaultTenant)
	if err != nil || len(list) != 1 || list[0].EventsPerRequest != 50 || list[0].Source != "config" {
		t.Errorf("config target: %+v, %v; want events_per_request 50", list, err)
	}
	dir := t.TempDir()
	cfg := engine.Config{Data: dir, Metadata: "sqlite:" + filepath.Join(dir, "meta.db")}
	cfg.Sweeper.Disabled = true
	cfg.Subscriptions.AllowLoopback = true
	cfg.Subscriptions.Targets = []dispatch.Target{{ID: "ops", URL: "http://127.0.0.1:9/hook", Secret: secret, EventsPerRequest: 2000}}
	s, err := engine.Open(context.Background(), cfg)
	if err == nil {
		_ = s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "subscriptions.targets[0].events_per_request: 2000") {
		t.Errorf("a target with events_per_request 2000: %v, want a refusal naming the field", err)
	}
}

// TestNothingDeliveredBesideAReplicaFromBeforeTheShards: while another
// replica holds the single events-dispatch lease of a version without
// shards (ADR 0285), this one delivers nothing; once that lease is
// given up, every event arrives.
func TestNothingDeliveredBesideAReplicaFromBeforeTheShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var old *sqlmeta.Store
	e := setup(t, func(c *engine.Config) {
		// The old replica holds its lease before this one starts.
		var err error
		if old, err = sqlmeta.Open(ctx, c.Metadata); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { old.Close() })
		if ok, err := old.TryLease(ctx, dispatch.DispatchLease, "a replica from before the shards", c.Clock.Now(), time.Hour); err != nil || !ok {
			t.Fatalf("TryLease = %v, %v", ok, err)
		}
	})
	r := newReceiver(t)
	e.subscribe(t, claimcheck.DefaultTenant, r, claimcheck.EventFilter{Types: []string{"created"}})
	ref := e.put(t, "orders", claimcheck.PutOptions{})
	// The dispatcher is running once its member lease is there; its
	// looks (each tick, a second of the clock apart) then find the old
	// lease and take no shard.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if l, err := old.Leases(ctx, dispatch.DispatchLease+"/member/", e.clock.Now()); err == nil && len(l) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the dispatcher's member lease")
		}
	}
	for range 3 {
		e.clock.Advance(tick)
		time.Sleep(20 * time.Millisecond) // a few of the dispatcher's 5ms ticks
	}
	if l, err := old.Leases(ctx, dispatch.DispatchLease+"/shard/", e.clock.Now()); err != nil || len(l) != 0 {
		t.Fatalf("shards taken beside a replica from before the shards: %+v, %v", l, err)
	}
	r.mu.Lock()
	early := len(r.got)
	r.mu.Unlock()
	if early != 0 {
		t.Fatalf("%d events delivered while a replica from before the shards held the lease", early)
	}
	if err := old.ReleaseLease(ctx, dispatch.DispatchLease, "a replica from before the shards"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(tick)
	r.wait("the created event", func() bool { return len(r.got) >= 1 })
	if got := r.kinds()[ref.ID]; !slices.Equal(got, []string{"created"}) {
		t.Errorf("claim %s: got %v, want created", ref.ID, got)
	}
}
