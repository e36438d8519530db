package temporal_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
	"github.com/claimcheck/claimcheck/sweep"
)

// KeptWorkflow fetches the photos (offloaded: the activity's result is a
// claim), waits, and only then uses them: after the wait a fresh worker
// rebuilds the workflow from history, which redeems the claim again.
func KeptWorkflow(ctx workflow.Context, wait time.Duration) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var photos []Photo
	if err := workflow.ExecuteActivity(ctx, FetchPhotos).Get(ctx, &photos); err != nil {
		return 0, err
	}
	if err := workflow.Sleep(ctx, wait); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range photos {
		if p.ID > 0 {
			n++
		}
	}
	return n, nil
}

// TestKeeperKeepsClaimsWhileTheRunLives runs a workflow against the real
// Temporal test server whose offloaded payload lives in a namespace with a
// max_age of 4 seconds. The engine's clock is a fake one the test moves:
// while the workflow's timer runs, 12 engine-seconds pass (three times
// max_age) with a keeper pass every 2, so without the keeper the claim
// would be expired. A fresh worker then replays the history and reads
// the payload. After the run closes, the keeper (given a retention of 60
// seconds) keeps the claims until close + retention + margin; a replay
// before that works; after it they expire and are collected. A claim of
// a run Temporal does not know is left to expire.
func TestKeeperKeepsClaimsWhileTheRunLives(t *testing.T) {
	ts := temporalServer(t)
	ctx := context.Background()
	fc := clock.NewFake(time.Now().UTC())
	no := false
	store := enginetest.Open(t, engine.Config{
		Clock: fc, Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{"kept": {TTL: claimcheck.TTLPolicy{
			MaxAge: claimcheck.Duration(4 * time.Second), MaxLifetime: claimcheck.Duration(time.Hour),
			DeleteAfterRead: &no, RetentionAfterRead: claimcheck.Duration(time.Second), GracePeriod: claimcheck.Duration(time.Second)}}},
	})
	d, err := cctemporal.NewDriver(ctx, store, cctemporal.Options{Namespace: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	c := ts.NewClientWithOptions(client.Options{ExternalStorage: d.ExternalStorage()})
	reg := prometheus.NewRegistry()
	const retention = time.Minute
	k, err := cctemporal.NewKeeper(store, c.WorkflowService(), cctemporal.KeeperOptions{
		Namespaces: []string{"kept"}, Interval: time.Second, Horizon: 3 * time.Second, ExtendBy: 8 * time.Second,
		Retention: retention, Margin: time.Second, CallsPerSecond: 1000, Now: fc.Now, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	sweepOnce := func() sweep.Result {
		t.Helper()
		res, err := store.SweepOnce(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// A claim of a run Temporal has never heard of.
	stray, err := store.Put(ctx, "kept", bytes.NewReader(bytes.Repeat([]byte("s"), 1000)), claimcheck.PutOptions{
		Labels: map[string]string{cctemporal.LabelNamespace: "default", cctemporal.LabelWorkflowID: "no-such-workflow", cctemporal.LabelRunID: "0f0f0f0f-0000-4000-8000-000000000000"}})
	if err != nil {
		t.Fatal(err)
	}

	const tq = "keeper"
	newWorker := func() worker.Worker {
		w := worker.New(c, tq, worker.Options{})
		w.RegisterWorkflow(KeptWorkflow)
		w.RegisterActivity(FetchPhotos)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w1 := newWorker()
	wfID := "kept-" + t.Name()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: tq}, KeptWorkflow, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, ts.GetDefaultClient(), wfID, enumspb.EVENT_TYPE_TIMER_STARTED)
	w1.Stop()
	worker.PurgeStickyWorkflowCache()

	runClaims := func() []claimcheck.ClaimInfo {
		t.Helper()
		page, err := store.List(ctx, "kept", claimcheck.ListOptions{Labels: map[string]string{cctemporal.LabelRunID: run.GetRunID()}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return page.Claims
	}
	if n := len(runClaims()); n == 0 {
		t.Fatal("no claim is labelled with the run: the activity's result was not offloaded")
	}

	// While the timer runs: 12 engine-seconds, a keeper pass every 2.
	opened := 0
	for range 6 {
		rep, err := k.RunOnce(ctx)
		if err != nil {
			t.Fatalf("keeper pass: %v", err)
		}
		opened += rep.Open
		fc.Advance(2 * time.Second)
		sweepOnce()
	}
	if opened == 0 {
		t.Fatal("the keeper never saw the run open")
	}
	for _, ci := range runClaims() {
		if ci.State != claimcheck.StateActive || !ci.Ref.ExpiresAt.After(fc.Now()) {
			t.Fatalf("claim of the open run %s: %s, expires %v (now %v): the keeper did not keep it", ci.Ref.ID, ci.State, ci.Ref.ExpiresAt, fc.Now())
		}
	}
	if info, err := store.Stat(ctx, stray); err != nil || info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonExpired {
		t.Fatalf("claim of an unknown run: %+v %v: want left to expire", info, err)
	}

	// A fresh worker rebuilds the workflow from history after the timer:
	// it redeems the offloaded result again.
	w2 := newWorker()
	defer w2.Stop()
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var n int
	if err := run.Get(gctx, &n); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	if n != 5000 {
		t.Fatalf("workflow saw %d photos, want 5000", n)
	}
	desc, err := c.DescribeWorkflowExecution(ctx, wfID, run.GetRunID())
	if err != nil {
		t.Fatal(err)
	}
	closed := desc.GetWorkflowExecutionInfo().GetCloseTime().AsTime()
	keepUntil := closed.Add(retention + time.Second)
	if r := keepUntil.Truncate(time.Second); !r.Equal(keepUntil) {
		keepUntil = r.Add(time.Second) // the keeper sends whole seconds, rounded up
	}

	// Closed: the next passes that see its claims keep them until close +
	// retention + margin, and no longer.
	closedSeen := 0
	for i := 0; i < 30 && closedSeen == 0; i++ {
		rep, err := k.RunOnce(ctx)
		if err != nil {
			t.Fatalf("keeper pass: %v", err)
		}
		closedSeen += rep.Closed
		fc.Advance(2 * time.Second)
	}
	if closedSeen == 0 {
		t.Fatal("the keeper never saw the run closed")
	}
	for _, ci := range runClaims() {
		if !ci.Ref.ExpiresAt.Equal(keepUntil) {
			t.Errorf("claim %s of the closed run expires %v, want close + retention + margin = %v", ci.Ref.ID, ci.Ref.ExpiresAt, keepUntil)
		}
	}
	if v := metrictest.Sum(t, reg, "claimcheck_temporal_keeper_claims_extended_total"); v == 0 {
		t.Error("claimcheck_temporal_keeper_claims_extended_total is 0")
	}

	// Just before that point a replay of the closed run's history works.
	fc.Set(keepUntil.Add(-2 * time.Second))
	sweepOnce()
	var events []*historypb.HistoryEvent
	it := ts.GetDefaultClient().GetWorkflowHistory(ctx, wfID, run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{ExternalStorage: d.ExternalStorage()})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflow(KeptWorkflow)
	if err := r.ReplayWorkflowHistory(nil, &historypb.History{Events: events}); err != nil {
		t.Fatalf("replay before close + retention: %v", err)
	}

	// Past it: expired, then collected. The keeper does not bring them
	// back (it sends nothing for them: they are kept as long as needed).
	fc.Set(keepUntil.Add(time.Second))
	rep, err := k.RunOnce(ctx)
	if err != nil || rep.Extended != 0 {
		t.Fatalf("keeper pass after close + retention: %+v, %v; want nothing extended", rep, err)
	}
	if res := sweepOnce(); res.ClaimsFinished == 0 {
		t.Fatalf("sweep after close + retention finished nothing: %+v", res)
	}
	fc.Advance(2 * time.Second) // grace period
	if res := sweepOnce(); res.BlobsCollected == 0 {
		t.Fatalf("sweep after the grace period collected nothing: %+v", res)
	}
	for _, ci := range runClaims() {
		if ci.State != claimcheck.StateDeleted || ci.DeleteReason != claimcheck.ReasonExpired {
			t.Errorf("claim %s after close + retention: %s (%s), want deleted (expired)", ci.Ref.ID, ci.State, ci.DeleteReason)
		}
	}
	for _, ci := range runClaims() {
		if _, err := store.Redeem(ctx, ci.Ref); !errors.Is(err, claimcheck.ErrGone) {
			t.Errorf("redeem of %s after close + retention: %v, want gone", ci.Ref.ID, err)
		}
	}
}
