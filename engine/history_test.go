package engine_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
)

// TestHistoryRetention: a finished claim answers gone with its reason
// until history.retention has passed since it finished; then the sweeper
// prunes its row and the row of its collected blob, and the claim answers
// not found. Live claims, and finished ones inside the retention, stay.
// (Events are kept no longer: TestHistoryKeptForEvents.)
func TestHistoryRetention(t *testing.T) {
	b := setup(t, func(c *engine.Config) {
		c.History.Retention = claimcheck.Retention(48 * time.Hour)
		c.Events.Retention = claimcheck.Retention(48 * time.Hour)
		c.Sweeper.Disabled = true
	})
	ctx := context.Background()
	old := b.put(t, "plain", []byte("finished long ago"))
	if err := b.store.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(2 * time.Hour) // past the grace period: the blob is collected
	b.sweep(t)
	if len(b.objects(t)) != 0 {
		t.Fatalf("objects after the collection: %v", b.objects(t))
	}

	b.clock.Advance(47 * time.Hour) // 49h after the delete, 47h after the collection
	recent := b.put(t, "plain", []byte("finished just now"))
	if err := b.store.Delete(ctx, recent); err != nil {
		t.Fatal(err)
	}
	live := b.put(t, "plain", []byte("still live"))

	claims, blobs, err := b.store.Sweeper().PruneHistory(ctx, 0)
	if err != nil || claims != 1 || blobs != 0 {
		t.Fatalf("PruneHistory = %d claims, %d blobs, %v; want the old claim only (its blob was collected 47h ago)", claims, blobs, err)
	}
	if _, err := b.store.Stat(ctx, old); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("stat of a pruned claim = %v, want not found", err)
	}
	if _, err := b.redeem(t, old); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("redeem of a pruned claim = %v, want not found", err)
	}
	_, err = b.redeem(t, recent)
	wantGone(t, err, claimcheck.ReasonDeleted)
	b.wantAlive(t, live, []byte("still live"))

	b.clock.Advance(2 * time.Hour) // now the blob's collection is 49h old too
	if claims, blobs, err = b.store.Sweeper().PruneHistory(ctx, 0); err != nil || claims != 0 || blobs != 1 {
		t.Fatalf("second PruneHistory = %d claims, %d blobs, %v; want the collected blob", claims, blobs, err)
	}
	_, err = b.redeem(t, recent)
	wantGone(t, err, claimcheck.ReasonDeleted)
	b.wantAlive(t, live, []byte("still live"))
}

// TestHistoryRetentionOff: a negative retention keeps finished rows.
func TestHistoryRetentionOff(t *testing.T) {
	b := setup(t, func(c *engine.Config) {
		c.History.Retention = claimcheck.Retention(-1)
		c.Sweeper.Disabled = true
	})
	ctx := context.Background()
	ref := b.put(t, "plain", []byte("kept"))
	if err := b.store.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(365 * 24 * time.Hour)
	if claims, blobs, err := b.store.Sweeper().PruneHistory(ctx, 0); err != nil || claims != 0 || blobs != 0 {
		t.Fatalf("PruneHistory with retention off = %d, %d, %v", claims, blobs, err)
	}
	_, err := b.redeem(t, ref)
	wantGone(t, err, claimcheck.ReasonDeleted)
}

// TestCompactedClaimAnswersGone: an hour after its finish the sweeper
// compacts a claim into its tombstone (ADR 0263); a redeem, a stat, a
// release and a delete of it then answer as for any finished claim, and
// its audit trail is whole.
func TestCompactedClaimAnswersGone(t *testing.T) {
	b := setup(t, func(c *engine.Config) { c.Sweeper.Disabled = true })
	ctx := context.Background()
	ref := b.put(t, "plain", []byte("finished an hour ago"))
	if err := b.store.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if n, err := b.store.Sweeper().CompactHistory(ctx, 0); err != nil || n != 0 {
		t.Fatalf("CompactHistory right after the finish = %d, %v; want 0", n, err)
	}
	b.clock.Advance(2 * time.Hour)
	b.sweep(t) // collects the blob
	if n, err := b.store.Sweeper().CompactHistory(ctx, 0); err != nil || n != 1 {
		t.Fatalf("CompactHistory = %d, %v; want 1", n, err)
	}
	_, err := b.redeem(t, ref)
	wantGone(t, err, claimcheck.ReasonDeleted)
	info, err := b.store.Stat(ctx, ref)
	if err != nil || info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonDeleted || info.DeletedAt.IsZero() {
		t.Errorf("stat of a compacted claim = %+v, %v; want deleted, with its reason and time", info, err)
	}
	if err := b.store.Release(ctx, ref, "billing"); !errors.Is(err, claimcheck.ErrGone) {
		t.Errorf("release of a compacted claim = %v, want gone", err)
	}
	if err := b.store.Delete(ctx, ref); err != nil {
		t.Errorf("delete of a compacted claim = %v, want nil (already finished)", err)
	}
	evs, err := b.store.ClaimEvents(ctx, ref, claimcheck.EventQuery{})
	if err != nil || len(evs) != 2 || evs[0].Kind != "created" || evs[1].Kind != "deleted" {
		t.Errorf("events of a compacted claim = %+v, %v; want created and deleted", evs, err)
	}
}

// TestHistoryKeptForEvents: a compacted claim's events are in its
// tombstone (ADR 0266), so with an events retention longer than the
// history retention the tombstone stays, and the claim answers gone with
// its whole audit trail, until the events retention has passed; with
// events kept forever, so is the tombstone.
func TestHistoryKeptForEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events time.Duration
		goneAt time.Duration // 0: never
	}{{"longer events retention", 10 * 24 * time.Hour, 10 * 24 * time.Hour}, {"events kept", -1, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, func(c *engine.Config) {
				c.History.Retention = claimcheck.Retention(48 * time.Hour)
				c.Events.Retention = claimcheck.Retention(tc.events)
				c.Sweeper.Disabled = true
			})
			ctx := context.Background()
			ref := b.put(t, "plain", []byte("audited"))
			if err := b.store.Delete(ctx, ref); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(2 * time.Hour)
			b.sweep(t)
			if n, err := b.store.Sweeper().CompactHistory(ctx, 0); err != nil || n != 1 {
				t.Fatalf("CompactHistory = %d, %v; want 1", n, err)
			}
			b.clock.Advance(72 * time.Hour) // past the history retention
			prune := func() {
				t.Helper()
				if _, err := b.store.Sweeper().PruneEvents(ctx, 0); err != nil {
					t.Fatal(err)
				}
				if _, _, err := b.store.Sweeper().PruneHistory(ctx, 0); err != nil {
					t.Fatal(err)
				}
			}
			prune()
			_, err := b.redeem(t, ref)
			wantGone(t, err, claimcheck.ReasonDeleted)
			if evs, err := b.store.ClaimEvents(ctx, ref, claimcheck.EventQuery{}); err != nil || len(evs) != 2 {
				t.Fatalf("events of a claim past the history retention = %+v, %v; want created and deleted", evs, err)
			}
			if tc.goneAt == 0 {
				b.clock.Advance(365 * 24 * time.Hour)
				prune()
				_, err := b.redeem(t, ref)
				wantGone(t, err, claimcheck.ReasonDeleted)
				return
			}
			b.clock.Advance(tc.goneAt) // past the events retention, by whole days
			prune()
			if _, err := b.redeem(t, ref); !errors.Is(err, claimcheck.ErrNotFound) {
				t.Errorf("redeem past the events retention = %v, want not found", err)
			}
			if evs, err := b.store.ClaimEvents(ctx, ref, claimcheck.EventQuery{}); err == nil && len(evs) != 0 {
				t.Errorf("events past the events retention = %+v; want none", evs)
			}
		})
	}
}

// TestStreamResumedAcrossCompaction: the live stream resumed with a
// Last-Event-ID from before a compaction gives the same events after it
// (they are read from the tombstones' trails, ADR 0266), in the same
// order and pages.
func TestStreamResumedAcrossCompaction(t *testing.T) {
	b := setup(t, func(c *engine.Config) { c.Sweeper.Disabled = true })
	ctx := context.Background()
	start := b.clock.Now().UnixNano()
	var refs []claimcheck.Ref
	for i := range 3 {
		refs = append(refs, b.put(t, "plain", []byte("streamed")))
		b.clock.Advance(time.Duration(i+1) * time.Second)
		if _, err := b.redeem(t, refs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, ref := range refs {
		if err := b.store.Delete(ctx, ref); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Second)
	}
	b.clock.Advance(time.Minute) // past the stream's settling time
	stream := func() []claimcheck.Event {
		t.Helper()
		var out []claimcheck.Event
		after := start
		for range 100 {
			page, next, err := b.store.StreamEvents(ctx, "default", claimcheck.EventFilter{}, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, page...)
			if next == after {
				return out
			}
			after = next
		}
		t.Fatal("the stream did not settle")
		return nil
	}
	before := stream()
	if len(before) < 9 {
		t.Fatalf("stream before compaction: %d events, want each claim's life", len(before))
	}
	b.clock.Advance(2 * time.Hour)
	if n, err := b.store.Sweeper().CompactHistory(ctx, 0); err != nil || n != 3 {
		t.Fatalf("CompactHistory = %d, %v; want 3", n, err)
	}
	if after := stream(); !reflect.DeepEqual(after, before) {
		t.Errorf("stream resumed after compaction:\n got %+v\nwant %+v", after, before)
	}
}
