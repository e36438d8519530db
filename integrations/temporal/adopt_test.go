package temporal_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/aws/s3driver"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/integrations/temporal/foreignbucket"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// awsClient is the stock s3driver's Client over the AWS SDK, as its
// companion awssdkv2 module would give (that module is not needed here).
type awsClient struct{ c *s3.Client }

func (a awsClient) PutObject(ctx context.Context, bucket, key string, data []byte) error {
	_, err := a.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	return err
}

func (a awsClient) ObjectExists(ctx context.Context, bucket, key string) (bool, error) {
	_, err := a.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	var nf *types.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	return err == nil, err
}

func (a awsClient) GetObject(ctx context.Context, bucket, key string) ([]byte, error) {
	out, err := a.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer func() { _ = out.Body.Close() }()
	return io.ReadAll(out.Body)
}

func (a awsClient) Describe() map[string]string { return nil }

// AdoptedWorkflow takes a large input (stored by the starter), fetches the
// comments (stored by the worker), waits for the "go" signal, and then
// fetches them again (stored by whichever driver the worker has then).
// The payloads are about 100 KB: enough to be offloaded, small enough for
// workflow code under -race.
func AdoptedWorkflow(ctx workflow.Context, input []Photo) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var before, after []Comment
	if err := workflow.ExecuteActivity(ctx, FetchComments).Get(ctx, &before); err != nil {
		return 0, err
	}
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
	if err := workflow.ExecuteActivity(ctx, FetchComments).Get(ctx, &after); err != nil {
		return 0, err
	}
	return len(input) + len(before) + len(after), nil
}

// bucketState is every key of a bucket with the sha256 of its bytes.
func bucketState(t *testing.T, c *s3.Client, bucket string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			data, err := awsClient{c}.GetObject(ctx, bucket, *o.Key)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(data)
			out[*o.Key] = hex.EncodeToString(h[:])
		}
	}
	return out
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestStockS3DriverWorkflowAdopted is the switch end to end, on a real
// Temporal server and MinIO: a workflow runs with Temporal's stock
// s3driver until it waits for a signal; its worker stops; a dry run of
// Adopt changes nothing; Adopt (twice: idempotent) moves the run's objects
// into claims and refuses an object whose bytes fail the hash in its key;
// a worker with claimcheck's driver (and the ForeignDriver for the old
// references) completes the workflow; a replay of the history with every
// reference rewritten to the legacy form works; the keeper keeps the
// claims until close + retention + margin, after which they expire and
// their objects are collected.
func TestStockS3DriverWorkflowAdopted(t *testing.T) {
	driverURL, s3c, driverBucket := testsvc.S3(t)
	ccStorage, _, ccBucket := testsvc.S3(t)
	ts := temporalServer(t)
	ctx := context.Background()

	stock, err := s3driver.NewDriver(s3driver.Options{Client: awsClient{s3c}, Bucket: s3driver.StaticBucket(driverBucket)})
	if err != nil {
		t.Fatal(err)
	}
	cA := ts.NewClientWithOptions(client.Options{ExternalStorage: converter.ExternalStorage{
		Drivers: []converter.StorageDriver{stock}, PayloadSizeThreshold: 32 << 10}})
	const tq = "adopt"
	start := func(c client.Client) worker.Worker {
		w := worker.New(c, tq, worker.Options{})
		w.RegisterWorkflow(AdoptedWorkflow)
		w.RegisterActivity(FetchComments)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return w
	}
	wA := start(cA)
	wfID := "adopt-" + t.Name()
	run, err := cA.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: tq}, AdoptedWorkflow, makePhotos(500))
	if err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, ts.GetDefaultClient(), wfID, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
	wA.Stop()
	worker.PurgeStickyWorkflowCache()

	written := bucketState(t, s3c, driverBucket)
	if len(written) < 2 {
		t.Fatalf("the stock driver wrote %d objects, want the input and the comments", len(written))
	}
	for key := range written {
		k, err := cctemporal.ParseForeignKey(key)
		if err != nil || !k.Workflow() || k.WorkflowID != wfID {
			t.Fatalf("stock driver key %q: %+v, %v: want the workflow's", key, k, err)
		}
	}

	// Beside them: an object whose bytes are not the ones its key names,
	// one of a standalone activity and one without an owner.
	wrong := []byte("not the payload the key names")
	badKey := "v0/ns/default/wt/AdoptedWorkflow/wi/" + wfID + "/ri/" + run.GetRunID() + "/d/sha256/" + hexSum([]byte("the payload"))
	actKey := "v0/ns/default/at/Fetch/ai/1/ri/r1/d/sha256/" + hexSum(wrong)
	bareKey := "v0/d/sha256/" + hexSum(wrong)
	for key, data := range map[string][]byte{badKey: wrong, actKey: wrong, bareKey: wrong} {
		if err := (awsClient{s3c}).PutObject(ctx, driverBucket, key, data); err != nil {
			t.Fatal(err)
		}
	}
	before := bucketState(t, s3c, driverBucket)

	fc := clock.NewFake(time.Now().UTC())
	no := false
	store := enginetest.Open(t, engine.Config{
		Data: t.TempDir(), Storage: ccStorage, Clock: fc, Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{"kept": {Compression: claimcheck.CompressionNone, TTL: claimcheck.TTLPolicy{
			MaxAge: claimcheck.Duration(4 * time.Second), MaxLifetime: claimcheck.Duration(time.Hour),
			DeleteAfterRead: &no, RetentionAfterRead: claimcheck.Duration(time.Second), GracePeriod: claimcheck.Duration(time.Second)}}},
	})
	objs, err := foreignbucket.Open(ctx, driverURL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = objs.Close() }()
	adopt := func(o cctemporal.AdoptOptions) cctemporal.AdoptReport {
		t.Helper()
		o.Bucket, o.Objects, o.Namespace = driverBucket, objs, "kept"
		rep, err := cctemporal.Adopt(ctx, store, o)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	claimsOfRun := func() []claimcheck.ClaimInfo {
		t.Helper()
		page, err := store.List(ctx, "kept", claimcheck.ListOptions{Labels: map[string]string{cctemporal.LabelWorkflowID: wfID}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return page.Claims
	}

	// Dry run: the report says what would happen; nothing changed.
	dry := adopt(cctemporal.AdoptOptions{DryRun: true})
	if dry.Counts[cctemporal.AdoptAdopted] != len(written) || dry.Counts[cctemporal.AdoptRefused] != 1 || dry.Counts[cctemporal.AdoptUnowned] != 2 || dry.Deleted != 0 {
		t.Fatalf("dry run: %+v, want %d adopted, 1 refused, 2 unowned, 0 deleted", dry, len(written))
	}
	if got := bucketState(t, s3c, driverBucket); !equalMaps(got, before) {
		t.Fatalf("the dry run changed the bucket:\nbefore %v\nafter  %v", before, got)
	}
	if n := len(claimsOfRun()); n != 0 {
		t.Fatalf("the dry run made %d claims", n)
	}
	refusal := dry.Refusals[0].Error()
	for _, want := range []string{badKey, hexSum(wrong), hexSum([]byte("the payload"))} {
		if !strings.Contains(refusal, want) {
			t.Errorf("refusal %q does not name %q", refusal, want)
		}
	}

	// For real, keeping the sources; then again, which adopts nothing
	// twice and deletes the sources; then a third time: nothing left.
	first := adopt(cctemporal.AdoptOptions{KeepSource: true})
	second := adopt(cctemporal.AdoptOptions{})
	third := adopt(cctemporal.AdoptOptions{})
	if first.Counts[cctemporal.AdoptAdopted] != len(written) || first.Deleted != 0 ||
		second.Counts[cctemporal.AdoptAlready] != len(written) || second.Counts[cctemporal.AdoptAdopted] != 0 || second.Deleted != len(written) ||
		third.Counts[cctemporal.AdoptAdopted]+third.Counts[cctemporal.AdoptAlready] != 0 {
		t.Fatalf("adopt runs: %+v, %+v, %+v", first, second, third)
	}
	claims := claimsOfRun()
	if len(claims) != len(written) {
		t.Fatalf("%d claims of the run after three adopt runs, want %d (one per object)", len(claims), len(written))
	}
	left := bucketState(t, s3c, driverBucket)
	if _, ok := left[badKey]; !ok || len(left) != 3 {
		t.Fatalf("bucket after adoption: %v; want only the refused and the unowned objects", left)
	}

	// Workers switch: claimcheck's driver for new payloads, the foreign
	// driver for the references already in history.
	d, err := cctemporal.NewDriver(ctx, store, cctemporal.Options{Namespace: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := cctemporal.NewForeignDriver(store, cctemporal.ForeignOptions{Name: cctemporal.S3DriverName,
		Buckets: map[string]cctemporal.ForeignBucket{driverBucket: objs}, Namespace: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	cB := ts.NewClientWithOptions(client.Options{ExternalStorage: d.ExternalStorage(fd)})
	wB := start(cB)
	defer wB.Stop()
	if err := cB.SignalWorkflow(ctx, wfID, run.GetRunID(), "go", nil); err != nil {
		t.Fatal(err)
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var n int
	if err := cB.GetWorkflow(gctx, wfID, run.GetRunID()).Get(gctx, &n); err != nil {
		t.Fatalf("workflow after the switch: %v", err)
	}
	if n != 500+500+500 {
		t.Fatalf("workflow result %d, want %d", n, 500+500+500)
	}
	if len(claimsOfRun()) <= len(written) {
		t.Fatal("the comments were not stored by claimcheck's driver after the switch")
	}
	replayLegacy(t, ts.GetDefaultClient(), wfID, run.GetRunID(), d.ExternalStorage(fd))

	keepAndCollect(t, store, fc, cB, wfID, run.GetRunID(), claimsOfRun, s3c, ccBucket)
}

// replayLegacy replays the run's history with every stock reference
// rewritten to the legacy json/external-storage-reference form.
func replayLegacy(t *testing.T, c client.Client, wfID, runID string, es converter.ExternalStorage) {
	t.Helper()
	ctx := context.Background()
	var events []*historypb.HistoryEvent
	legacy := 0
	it := c.GetWorkflowHistory(ctx, wfID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		err = proxy.VisitPayloads(ctx, ev, proxy.VisitPayloadsOptions{
			Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
				for i, p := range ps {
					if lp, ok := toLegacy(t, p); ok {
						ps[i] = lp
						legacy++
					}
				}
				return ps, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	if legacy < 2 {
		t.Fatalf("%d stock references rewritten, want the input's and the comments'", legacy)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{ExternalStorage: es})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflow(AdoptedWorkflow)
	if err := r.ReplayWorkflowHistory(nil, &historypb.History{Events: events}); err != nil {
		t.Fatalf("replay with legacy references: %v", err)
	}
}

// toLegacy rewrites a json/protobuf reference of the stock driver into
// the legacy form.
func toLegacy(t *testing.T, p *commonpb.Payload) (*commonpb.Payload, bool) {
	if string(p.GetMetadata()["encoding"]) != "json/protobuf" || !strings.HasSuffix(string(p.GetMetadata()["messageType"]), "ExternalStorageReference") {
		return nil, false
	}
	var ref struct {
		DriverName string            `json:"driverName"`
		ClaimData  map[string]string `json:"claimData"`
	}
	if err := json.Unmarshal(p.GetData(), &ref); err != nil || ref.DriverName != cctemporal.S3DriverName {
		return nil, false
	}
	data, err := json.Marshal(map[string]any{"driver_name": ref.DriverName, "driver_claim": map[string]any{"claim_data": ref.ClaimData}})
	if err != nil {
		t.Fatal(err)
	}
	return &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/external-storage-reference")}, Data: data}, true
}

// keepAndCollect runs the keeper over the closed run: its claims are kept
// until close + retention + margin and no longer; then they expire and
// their objects leave claimcheck's bucket.
func keepAndCollect(t *testing.T, store *engine.Store, fc *clock.Fake, c client.Client, wfID, runID string,
	claimsOfRun func() []claimcheck.ClaimInfo, s3c *s3.Client, ccBucket string) {
	t.Helper()
	ctx := context.Background()
	const retention = time.Minute
	k, err := cctemporal.NewKeeper(store, c.WorkflowService(), cctemporal.KeeperOptions{
		Namespaces: []string{"kept"}, Interval: time.Second, Horizon: 3 * time.Second, ExtendBy: 8 * time.Second,
		Retention: retention, Margin: time.Second, CallsPerSecond: 1000, Now: fc.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := c.DescribeWorkflowExecution(ctx, wfID, runID)
	if err != nil {
		t.Fatal(err)
	}
	keepUntil := desc.GetWorkflowExecutionInfo().GetCloseTime().AsTime().Add(retention + time.Second)
	if r := keepUntil.Truncate(time.Second); !r.Equal(keepUntil) {
		keepUntil = r.Add(time.Second)
	}
	fc.Advance(2 * time.Second) // the claims enter the keeper's horizon
	rep, err := k.RunOnce(ctx)
	// Two runs as the keeper groups them: the start input's key names no
	// run (ri/null: stored before Temporal chose it), kept by the
	// workflow's latest run, which is this one.
	if err != nil || rep.Closed == 0 || rep.Unknown != 0 || rep.Open != 0 || rep.Claims != len(claimsOfRun()) {
		t.Fatalf("keeper pass: %+v, %v; want every claim of the run, closed", rep, err)
	}
	for _, ci := range claimsOfRun() {
		if !ci.Ref.ExpiresAt.Equal(keepUntil) {
			t.Errorf("claim %s (adopted: %v) expires %v, want close + retention + margin = %v", ci.Ref.ID, ci.Labels[cctemporal.LabelSource] != "", ci.Ref.ExpiresAt, keepUntil)
		}
	}
	fc.Set(keepUntil.Add(time.Second))
	for range 2 {
		if _, err := store.SweepOnce(ctx, 0); err != nil {
			t.Fatal(err)
		}
		fc.Advance(2 * time.Second) // the grace period, then collection
	}
	for _, ci := range claimsOfRun() {
		if ci.State != claimcheck.StateDeleted {
			t.Errorf("claim %s after close + retention: %s, want deleted", ci.Ref.ID, ci.State)
		}
	}
	left := 0
	p := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: aws.String(ccBucket), Prefix: aws.String("kept/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		left += len(page.Contents)
	}
	if left != 0 {
		t.Fatalf("%d objects of namespace kept left in claimcheck's bucket after close + retention, want 0", left)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	ka := make([]string, 0, len(a))
	for k := range a {
		ka = append(ka, k)
	}
	sort.Strings(ka)
	for _, k := range ka {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}
