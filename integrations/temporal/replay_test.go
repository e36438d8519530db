package temporal_test

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
)

// ResumableWorkflow runs a step, waits for a signal, then runs the next
// step on the first one's output. The wait lets a test replace the worker
// between the steps.
func ResumableWorkflow(ctx workflow.Context, n int) (State, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	s := State{N: n}
	if err := workflow.ExecuteActivity(ctx, Step, s).Get(ctx, &s); err != nil {
		return s, err
	}
	workflow.GetSignalChannel(ctx, "continue").Receive(ctx, nil)
	if err := workflow.ExecuteActivity(ctx, Step, s).Get(ctx, &s); err != nil {
		return s, err
	}
	return s, nil
}

// waitForEvent long-polls the history until an event of type et appears
// (the server holds the poll open; no sleeping).
func waitForEvent(t *testing.T, c client.Client, wfID string, et enumspb.EventType) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), wfID, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEventType() == et {
			return
		}
	}
	t.Fatalf("history of %s ended without a %s event", wfID, et)
}

// Replay: the worker that ran the first step is stopped and the workflow
// cache purged mid-workflow; a new worker must rebuild the workflow from
// history, resolving the reference to the first step's output, and go
// on. Afterwards the whole history replays in a WorkflowReplayer.
func TestReplayAfterWorkerRestartResolvesReferences(t *testing.T) {
	ts := temporalServer(t)
	store := openStore(t)
	ctx := context.Background()
	d, err := cctemporal.NewDriver(ctx, store, cctemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := ts.NewClientWithOptions(client.Options{ExternalStorage: d.ExternalStorage()})
	const tq = "replay"
	newWorker := func() worker.Worker {
		w := worker.New(c, tq, worker.Options{})
		w.RegisterWorkflow(ResumableWorkflow)
		w.RegisterActivity(Step)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return w
	}

	w1 := newWorker()
	wfID := "replay-" + t.Name()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: tq}, ResumableWorkflow, pipelinePhotos())
	if err != nil {
		t.Fatal(err)
	}
	// The workflow task after the first activity completes is where the
	// workflow reads the step's (offloaded) output and starts waiting.
	waitForEvent(t, ts.GetDefaultClient(), wfID, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
	waitForEvent(t, ts.GetDefaultClient(), wfID, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
	w1.Stop()
	worker.PurgeStickyWorkflowCache()

	w2 := newWorker()
	defer w2.Stop()
	if err := c.SignalWorkflow(ctx, wfID, run.GetRunID(), "continue", nil); err != nil {
		t.Fatal(err)
	}
	var final State
	if err := run.Get(ctx, &final); err != nil {
		t.Fatal(err)
	}
	if err := checkStep(final, 2); err != nil {
		t.Fatal(err)
	}

	// Replay the recorded history from the start, as a worker does after
	// a cache eviction, and check that it needs the driver: without it
	// the workflow would see a reference where it expects its data.
	var events []*historypb.HistoryEvent
	it := ts.GetDefaultClient().GetWorkflowHistory(ctx, wfID, run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	h := &historypb.History{Events: events}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{ExternalStorage: d.ExternalStorage()})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflow(ResumableWorkflow)
	if err := r.ReplayWorkflowHistory(nil, h); err != nil {
		t.Fatalf("replay with the driver: %v", err)
	}
}
