package engine_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
)

// TestDedupAfterUploadLeavesOneObject: a put that sends no digest first
// uploads its body, then finds the same content at commit. Its own
// object is deleted at once, not left for the sweeper: two identical
// puts leave one object, and both claims redeem the bytes.
func TestDedupAfterUploadLeavesOneObject(t *testing.T) {
	b := setup(t)
	data := randomBytes(t, 256<<10)
	first := b.put(t, "plain", data)
	second := b.put(t, "plain", data) // streamed: the engine sees no digest up front
	if second.Digest != first.Digest || second.ID == first.ID {
		t.Fatalf("second ref %+v, want a new claim of the same content", second)
	}
	if objs := b.objects(t); len(objs) != 1 {
		t.Errorf("objects after two identical puts: %v, want one", objs)
	}
	for _, ref := range []claimcheck.Ref{first, second} {
		if got, err := b.redeem(t, ref); err != nil || !bytes.Equal(got, data) {
			t.Errorf("redeem %s: %d bytes, %v", ref.ID, len(got), err)
		}
	}
}

// TestDiscardedObjectRetriedBySweeper: when the put's own delete of its
// unneeded object fails, the put still succeeds and the blob row stays
// due; the sweeper deletes the object after its retry delay
// (failingDeletes is in deadletter_test.go).
func TestDiscardedObjectRetriedBySweeper(t *testing.T) {
	const retry = 30 * time.Second
	var fd *failingDeletes
	b := setup(t, func(c *engine.Config) {
		c.Sweeper.Disabled, c.Sweeper.RetryDelay = true, retry
		store, err := blob.Open(context.Background(), "file://"+filepath.ToSlash(filepath.Join(c.Data, "blobs")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		fd = &failingDeletes{Store: store}
		c.BlobStore = fd
	})
	data := randomBytes(t, 64<<10)
	b.put(t, "plain", data)
	fd.on = true
	second := b.put(t, "plain", data)
	if objs := b.objects(t); len(objs) != 2 {
		t.Fatalf("objects with the delete failing: %v, want both still there", objs)
	}
	fd.on = false
	if _, err := b.store.SweepOnce(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	if objs := b.objects(t); len(objs) != 2 {
		t.Errorf("the sweeper deleted before the retry delay: %v", objs)
	}
	b.clock.Advance(retry)
	if _, err := b.store.SweepOnce(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	if objs := b.objects(t); len(objs) != 1 {
		t.Errorf("objects after the retry: %v, want one", objs)
	}
	if got, err := b.redeem(t, second); err != nil || !bytes.Equal(got, data) {
		t.Errorf("redeem of the deduplicated claim: %d bytes, %v", len(got), err)
	}
}
