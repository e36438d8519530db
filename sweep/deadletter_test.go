package sweep_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/sweep"
)

// brokenDeletes fails every object delete while broken is set.
type brokenDeletes struct {
	blob.Store
	mu      sync.Mutex
	broken  bool
	deletes int
}

func (b *brokenDeletes) Delete(ctx context.Context, key string) error {
	b.mu.Lock()
	b.deletes++
	broken := b.broken
	b.mu.Unlock()
	if broken {
		return errors.New("injected: access denied")
	}
	return b.Store.Delete(ctx, key)
}

func (b *brokenDeletes) set(broken bool) (deletes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.broken = broken
	return b.deletes
}

// TestDeleteFailuresEndInDeadLetter: a delete that keeps failing is retried
// with growing delays, parked after max_attempts (out of the due index, so
// later runs never touch it), counted in the metrics and the events log,
// and `dlq retry` brings it back for a successful collection.
func TestDeleteFailuresEndInDeadLetter(t *testing.T) {
	ctx := context.Background()
	cfg := sweep.Config{RetryDelay: 10 * time.Second, MaxAttempts: 3}
	b := setup(t, cfg)
	bd := &brokenDeletes{Store: b.blobs, broken: true}
	sw := sweep.New(cfg, b.meta, bd, nil, b.clock, nil, b.metric)
	b.seed(t, 1, t0.Add(time.Second))
	b.clock.Advance(time.Second)
	if res, err := sw.RunOnce(ctx, 0); err != nil || res.ClaimsFinished != 1 {
		t.Fatalf("finishing the claim: %+v %v", res, err)
	}
	b.clock.Advance(time.Minute) // grace over
	for attempt, wait := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		b.clock.Advance(wait)
		res, err := sw.RunOnce(ctx, 0)
		if err != nil || res.DeleteFailures != 1 {
			t.Fatalf("attempt %d: %+v %v", attempt+1, res, err)
		}
	}
	dead, err := b.meta.DeadLetters(ctx, "", "", 10)
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadLetters = %v, %v; want one blob", dead, err)
	}
	if d := dead[0]; d.Attempts != 3 || d.LastError == "" || d.State != meta.BlobDeleting || !d.CollectAt.IsZero() {
		t.Errorf("dead letter = %+v, want deleting with 3 attempts, the error, no due time", d)
	}
	if got := testutil.ToFloat64(b.metric.Reaper.DeadLetters); got != 1 {
		t.Errorf("dead letters gauge = %v, want 1", got)
	}

	// No hot loop: however long we wait, no run touches the parked blob.
	before := bd.set(true)
	b.clock.Advance(100 * time.Hour)
	if res, err := sw.RunOnce(ctx, 0); err != nil || res.Ops() != 0 || res.DeleteFailures != 0 {
		t.Fatalf("run after parking: %+v %v", res, err)
	}
	if res, err := sw.Tick(ctx); err != nil || res.Ops() != 0 {
		t.Fatalf("tick after parking: %+v %v", res, err)
	}
	if after := bd.set(true); after != before {
		t.Errorf("%d deletes attempted on a parked blob", after-before)
	}
	events, err := b.meta.Events(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !hasEvent(events, meta.EventDeadLetter, dead[0].ID) {
		t.Errorf("no %s event for blob %s in %+v", meta.EventDeadLetter, dead[0].ID, events)
	}

	bd.set(false) // the operator fixed the bucket's permissions
	back, err := sw.RetryDeadLetters(claimcheck.WithActor(ctx, "key_ops"), []string{dead[0].ID})
	if err != nil || len(back) != 1 {
		t.Fatalf("RetryDeadLetters = %v, %v", back, err)
	}
	if got := testutil.ToFloat64(b.metric.Reaper.DeadLetters); got != 0 {
		t.Errorf("dead letters gauge after retry = %v, want 0", got)
	}
	if events, err = b.meta.Events(ctx, 0, 100); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events, func(e meta.Event) bool {
		return e.Kind == meta.EventDeadLetterRetry && e.BlobID == dead[0].ID && e.Actor == "key_ops"
	}) {
		t.Errorf("no %s event by key_ops for blob %s in %+v", meta.EventDeadLetterRetry, dead[0].ID, events)
	}
	if res, err := sw.RunOnce(ctx, 0); err != nil || res.BlobsCollected != 1 {
		t.Fatalf("run after retry: %+v %v", res, err)
	}
	if got, err := b.meta.Blob(ctx, dead[0].ID); err != nil || got.State != meta.BlobDeleted {
		t.Errorf("blob after retry = %+v, %v; want deleted", got, err)
	}
	if events, _ = b.meta.Events(ctx, 0, 100); !hasEvent(events, meta.EventDeadLetterRetry, dead[0].ID) {
		t.Errorf("no %s event", meta.EventDeadLetterRetry)
	}
}

func hasEvent(events []meta.Event, kind, blobID string) bool {
	for _, e := range events {
		if e.Kind == kind && e.BlobID == blobID {
			return true
		}
	}
	return false
}
