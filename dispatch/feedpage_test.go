package dispatch_test

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/engine"
)

// hookLog records the CloudEvent ids each path of one receiver took, in
// the order they came: one path per subscription.
type hookLog struct {
	mu   sync.Mutex
	cond *sync.Cond
	ids  map[string][]string
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ce dispatch.CloudEvent
	if err := json.NewDecoder(r.Body).Decode(&ce); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.ids[r.URL.Path] = append(h.ids[r.URL.Path], ce.ID)
	h.cond.Broadcast()
	h.mu.Unlock()
}

// TestIdleSubscriptionsShareOneFeedRead: a tick's rounds of one
// tenant's subscriptions read the feed once between them (ADR 0278),
// not once each, and each still gets exactly its events, in order.
func TestIdleSubscriptionsShareOneFeedRead(t *testing.T) {
	t.Parallel()
	const n = 200
	reg := prometheus.NewRegistry()
	e := setup(t, func(c *engine.Config) {
		c.Registerer = reg
		c.TenantLimits.Subscriptions = n
		c.Subscriptions.Concurrency = 1 // one lane: every event in seq order
	})
	h := &hookLog{ids: map[string][]string{}}
	h.cond = sync.NewCond(&h.mu)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for i := range n {
		spec := claimcheck.SubscriptionSpec{URL: srv.URL + "/s/" + strconv.Itoa(i),
			EventFilter: claimcheck.EventFilter{Types: []string{"created"}}}
		if _, err := e.store.CreateSubscription(context.Background(), claimcheck.DefaultTenant, spec); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(time.Millisecond)
	reads := func() float64 { return metaOps(t, reg, "FeedEvents") }
	// Every subscription's round is due after each move of the clock,
	// and finds nothing. A tick reads the feed once for the rounds it
	// starts; a round still running from one move starts on a later
	// tick, so a move may cost a read or two, never one per subscription.
	const moves = 3
	before := reads()
	for range moves {
		at := reads()
		e.clock.Advance(tick)
		deadline := time.Now().Add(10 * time.Second)
		for reads() == at && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // the tick's rounds end
	}
	if got := reads() - before; got > 3*moves {
		t.Fatalf("%d idle subscriptions read the feed %v times in %d moves of the clock, want at most %d", n, got, moves, 3*moves)
	}
	var want []string
	for range 3 {
		e.put(t, "audit", claimcheck.PutOptions{})
		e.clock.Advance(time.Microsecond)
	}
	e.clock.Advance(tick)
	h.mu.Lock()
	defer h.mu.Unlock()
	timer := time.AfterFunc(20*time.Second, func() { h.mu.Lock(); h.ids["timeout"] = nil; h.cond.Broadcast(); h.mu.Unlock() })
	defer timer.Stop()
	for len(h.ids) < n || slices.ContainsFunc(slices.Collect(maps.Values(h.ids)), func(ids []string) bool { return len(ids) < 3 }) {
		if _, out := h.ids["timeout"]; out {
			t.Fatalf("timed out: %d subscriptions got events", len(h.ids)-1)
		}
		h.cond.Wait()
	}
	for path, ids := range h.ids {
		if want == nil {
			want = ids
		}
		if len(ids) != 3 {
			t.Errorf("%s got %d events, want the 3 puts' created", path, len(ids))
		}
		if !slices.Equal(ids, want) || !slices.IsSortedFunc(ids, bySeq) {
			t.Errorf("%s got events %v, want %v in seq order", path, ids, want)
		}
	}
}

// bySeq orders CloudEvent ids (seqs).
func bySeq(a, b string) int {
	x, _ := strconv.ParseInt(a, 10, 64)
	y, _ := strconv.ParseInt(b, 10, 64)
	return cmp.Compare(x, y)
}

// metaOps is how many metadata operations op the registry counted.
func metaOps(t *testing.T, reg *prometheus.Registry, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "claimcheck_meta_operations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" && l.GetValue() == op {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
