package dispatch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// countingStore counts the reads an idle dispatcher makes.
type countingStore struct {
	*sqlmeta.Store
	feeds, lists atomic.Int64
}

func (c *countingStore) FeedEvents(ctx context.Context, tenant string, after, upTo int64, limit int, labels bool) ([]meta.FeedEvent, error) {
	c.feeds.Add(1)
	return c.Store.FeedEvents(ctx, tenant, after, upTo, limit, labels)
}

func (c *countingStore) Subscriptions(ctx context.Context, tenant string) ([]meta.Subscription, error) {
	c.lists.Add(1)
	return c.Store.Subscriptions(ctx, tenant)
}

// TestIdleCostsOneLookPerTick: with many subscriptions over many tenants
// and nothing written, a dispatcher makes one feed read per tick (not
// one per tenant or subscription) and reads the subscriptions table
// again only when a change moved meta.SubscriptionsChanged (ADR 0278).
func TestIdleCostsOneLookPerTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	clk := clock.NewFake(t0)
	for i := range 200 {
		s := meta.Subscription{ID: fmt.Sprintf("s%03d", i), Tenant: fmt.Sprintf("t%02d", i%20), URL: "http://127.0.0.1:9/",
			Secret: []byte("whsec_x"), Enabled: true, Source: meta.SourceAPI, CreatedAt: clk.Now(),
			Cursor: clk.Now().UnixNano(), State: meta.SubscriptionActive}
		if err := m.CreateSubscription(ctx, s, 0); err != nil {
			t.Fatal(err)
		}
	}
	cs := &countingStore{Store: m}
	d := dispatch.New(dispatch.Config{Interval: time.Millisecond, Settle: time.Millisecond}, cs,
		func(s meta.Subscription) ([]byte, error) { return s.Secret, nil }, clk, nil, nil)
	d.Start(ctx)
	t.Cleanup(d.Stop)

	// Step the clock a tick at a time: each step lets the dispatcher's
	// loop (ticking every millisecond of real time) look once or more.
	step := func(n int) {
		for range n {
			clk.Advance(100 * time.Millisecond)
			time.Sleep(3 * time.Millisecond)
		}
	}
	step(20) // the shards taken, every subscription's first round run
	feeds, lists := cs.feeds.Load(), cs.lists.Load()
	const steps = 50
	step(steps)
	if got := cs.lists.Load() - lists; got != 0 {
		t.Errorf("the subscriptions were read %d times while nothing changed them", got)
	}
	// One look a tick at most; the loop may tick several times a step,
	// so the bound is per subscription, not per step: 200 subscriptions
	// reading their own would make thousands.
	if got := cs.feeds.Load() - feeds; got > 3*steps {
		t.Errorf("%d feed reads over %d steps of an idle dispatcher with 200 subscriptions of 20 tenants; want one a tick", got, steps)
	}
	if err := m.ResumeSubscription(ctx, "t00", "s000"); err != nil {
		t.Fatal(err)
	}
	// Read once the dispatcher next looks at the cursor (a second of the
	// clock): step until it has, however slowly the loop runs here.
	for deadline := time.Now().Add(30 * time.Second); cs.lists.Load() == lists; step(1) {
		if time.Now().After(deadline) {
			t.Fatal("a change of the subscriptions was not read")
		}
	}
}
