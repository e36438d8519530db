package temporal_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/sweep"
)

// countingTemporal answers every run as open and counts the calls: the
// keeper's cost is counted, Temporal's own is not measured here.
type countingTemporal struct {
	workflowservice.WorkflowServiceClient
	describes, namespaces atomic.Int64
}

func (c *countingTemporal) DescribeWorkflowExecution(context.Context, *workflowservice.DescribeWorkflowExecutionRequest, ...grpc.CallOption) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	c.describes.Add(1)
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING}}, nil
}

func (c *countingTemporal) DescribeNamespace(context.Context, *workflowservice.DescribeNamespaceRequest, ...grpc.CallOption) (*workflowservice.DescribeNamespaceResponse, error) {
	c.namespaces.Add(1)
	return &workflowservice.DescribeNamespaceResponse{Config: &namespacepb.NamespaceConfig{
		WorkflowExecutionRetentionTtl: durationpb.New(72 * time.Hour)}}, nil
}

// BenchmarkKeeperCost counts the keeper's calls per interval for
// KEEPER_RUNS open runs (default 1,000; docs/PERFORMANCE-HISTORY.md has 10,000),
// each owning one claim, in steady state: the claims are put, then 12
// intervals of 5 minutes pass (engine time), with a pass each; the
// averages over the last 8 are reported. The Temporal service is a
// counting stand-in that answers every run as open.
//
//	KEEPER_RUNS=10000 go test -run '^$' -bench KeeperCost -benchtime 1x ./integrations/temporal
func BenchmarkKeeperCost(b *testing.B) {
	runs := 1000
	if s := os.Getenv("KEEPER_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("KEEPER_RUNS=%q: want a positive number", s)
		}
		runs = n
	}
	ctx := context.Background()
	for range b.N {
		fc := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		store := enginetest.Open(b, engine.Config{
			Clock: fc, Sweeper: sweep.Config{Disabled: true},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Namespaces: map[string]claimcheck.Policy{"kept": {TTL: claimcheck.TTLPolicy{
				MaxAge: claimcheck.Duration(20 * time.Minute), MaxLifetime: claimcheck.Duration(30 * 24 * time.Hour)}}},
		})
		for i := range runs {
			_, err := store.Put(ctx, "kept", bytes.NewReader([]byte(fmt.Sprintf("payload of run %d", i))), claimcheck.PutOptions{
				Labels: map[string]string{cctemporal.LabelNamespace: "default", cctemporal.LabelWorkflowID: fmt.Sprintf("wf-%d", i), cctemporal.LabelRunID: fmt.Sprintf("run-%d", i)}})
			if err != nil {
				b.Fatal(err)
			}
		}
		tmp := &countingTemporal{}
		k, err := cctemporal.NewKeeper(store, tmp, cctemporal.KeeperOptions{
			Namespaces: []string{"kept"}, Interval: 5 * time.Minute, CallsPerSecond: 1e9, Now: fc.Now,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			b.Fatal(err)
		}
		var total cctemporal.KeeperReport
		var passTime time.Duration
		const warm, measured = 4, 8
		for pass := range warm + measured {
			start := time.Now()
			rep, err := k.RunOnce(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if pass >= warm {
				total.Runs += rep.Runs
				total.Extended += rep.Extended
				total.ClaimsCalls += rep.ClaimsCalls
				total.TemporalCall += rep.TemporalCall
				passTime += time.Since(start)
			}
			fc.Advance(5 * time.Minute)
		}
		// Every claim must still be alive: the keeper kept all of them.
		page, err := store.List(ctx, "kept", claimcheck.ListOptions{State: claimcheck.StateActive, Order: claimcheck.ListExpiring, Limit: 1})
		if err != nil || len(page.Claims) == 0 || !page.Claims[0].Ref.ExpiresAt.After(fc.Now()) {
			b.Fatalf("after %d passes the soonest claim is %+v (%v): the keeper let it expire", warm+measured, page.Claims, err)
		}
		b.ReportMetric(float64(total.TemporalCall)/measured, "temporal_calls/interval")
		b.ReportMetric(float64(total.ClaimsCalls)/measured, "claimcheck_calls/interval")
		b.ReportMetric(float64(total.Extended)/measured, "extensions/interval")
		b.ReportMetric(passTime.Seconds()/measured, "s/pass")
		store.Close()
	}
}
