package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/sweep"
)

// TestSweepOncePrunesHistory: `sweep --once` finishes due claims and
// collects blobs, then prunes the rows of claims finished longer ago than
// history.retention (default 30 days): such a claim answers not found
// afterwards, while one finished by this very sweep keeps its row.
func TestSweepOncePrunesHistory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(time.Now().Add(-40 * 24 * time.Hour))
	store := enginetest.Open(t, engine.Config{Data: dir, Clock: clk, Sweeper: sweep.Config{Disabled: true}})
	old, err := store.Put(ctx, "orders", strings.NewReader("deleted forty days ago"), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	// Due (max_age 24h) long ago, but nothing has finished it yet.
	expired, err := store.Put(ctx, "orders", strings.NewReader("never redeemed"), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour) // past the grace period of the deleted claim's blob
	if res, err := store.SweepOnce(ctx, 0); err != nil || res.BlobsCollected != 1 {
		t.Fatalf("collect the deleted claim's blob: %+v, %v", res, err)
	}
	store.Close()

	out, errOut, code := runMain(t, "sweep", "--once", "--data", dir)
	var got map[string]int
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("sweep --once = %d\n%s%s", code, out, errOut)
	}
	// The expired claim's blob waits its grace period; the deleted claim
	// is compacted (its collected blob's row goes with its own), and its
	// tombstone and the events of forty days ago are past their retention.
	if got["claims_finished"] != 1 || got["blobs_collected"] != 0 || got["claims_compacted"] != 1 ||
		got["claims_pruned"] != 1 || got["blobs_pruned"] != 0 || got["events_pruned"] == 0 {
		t.Errorf("sweep --once = %s; want the expired claim finished, the deleted one compacted then pruned, old events pruned", out)
	}

	store = enginetest.Open(t, engine.Config{Data: dir, Sweeper: sweep.Config{Disabled: true}})
	if _, err := store.Stat(ctx, old); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Errorf("stat of the pruned claim = %v, want not found", err)
	}
	if info, err := store.Stat(ctx, expired); err != nil || info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonExpired {
		t.Errorf("stat of the claim the sweep just finished = %+v, %v; want its row, deleted (expired)", info, err)
	}
}
