package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/proto"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

// One in-process Temporal server serves every test of the package: it
// takes seconds to start (more under -race), workflows are isolated by
// their ids and task queues.
var (
	serverOnce sync.Once
	tserver    *temporaltest.TestServer
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tserver != nil {
		tserver.Stop()
	}
	os.Exit(code)
}

func temporalServer(t *testing.T) *temporaltest.TestServer {
	t.Helper()
	serverOnce.Do(func() { tserver = temporaltest.NewServer() })
	return tserver
}

// openStore opens an embedded store with its defaults (SQLite and files
// in a temporary directory).
func openStore(t testing.TB) *engine.Store {
	t.Helper()
	return enginetest.Open(t, engine.Config{})
}

// Photo and Comment are the seed's records: 5,000 photos make about
// 1.2 MB of JSON, 500 comments about 75 KB.
type Photo struct {
	AlbumID      int    `json:"albumId"`
	ID           int    `json:"id"`
	Title        string `json:"title"`
	URL          string `json:"url"`
	ThumbnailURL string `json:"thumbnailUrl"`
	Step         int    `json:"step,omitempty"`
}

type Comment struct {
	PostID int    `json:"postId"`
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Email  string `json:"email"`
	Body   string `json:"body"`
}

func makePhotos(n int) []Photo {
	ps := make([]Photo, n)
	for i := range ps {
		id := i + 1
		ps[i] = Photo{
			AlbumID:      id/50 + 1,
			ID:           id,
			Title:        fmt.Sprintf("photo %d of the album, a title long enough to look like the real placeholder text of a photo", id),
			URL:          fmt.Sprintf("https://via.placeholder.test/600/%06x", id*7919),
			ThumbnailURL: fmt.Sprintf("https://via.placeholder.test/150/%06x", id*7919),
		}
	}
	return ps
}

func makeComments(n int) []Comment {
	cs := make([]Comment, n)
	for i := range cs {
		id := i + 1
		cs[i] = Comment{PostID: id/5 + 1, ID: id, Name: fmt.Sprintf("comment %d", id),
			Email: fmt.Sprintf("user%d@example.test", id), Body: "a comment body of some sixty-five bytes, as the seed's comments have"}
	}
	return cs
}

func FetchPhotos(ctx context.Context) ([]Photo, error)     { return makePhotos(5000), nil }
func FetchComments(ctx context.Context) ([]Comment, error) { return makeComments(500), nil }

// Summary is the photo workflow's result: the data itself, so the client
// reads a large result back through the driver too.
type Summary struct {
	Photos   []Photo
	Comments []Comment
}

func PhotoWorkflow(ctx workflow.Context) (Summary, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var s Summary
	if err := workflow.ExecuteActivity(ctx, FetchPhotos).Get(ctx, &s.Photos); err != nil {
		return s, err
	}
	if err := workflow.ExecuteActivity(ctx, FetchComments).Get(ctx, &s.Comments); err != nil {
		return s, err
	}
	return s, nil
}

// historyPayloads returns every payload of the workflow's history as
// stored by the server, read with a client that has no driver or codec.
func historyPayloads(t *testing.T, c client.Client, wfID string) ([]*commonpb.Payload, int) {
	t.Helper()
	ctx := context.Background()
	var out []*commonpb.Payload
	total := 0
	it := c.GetWorkflowHistory(ctx, wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		total += protoSize(ev)
		err = proxy.VisitPayloads(ctx, ev, proxy.VisitPayloadsOptions{
			Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
				out = append(out, ps...)
				return ps, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out, total
}

func protoSize(ev *historypb.HistoryEvent) int { return sizeOf(ev) }

func sizeOf(m proto.Message) int { return proto.Size(m) }

// storedRef returns the claimcheck reference inside an External Storage
// reference payload, or false when p is not one.
func storedRef(p *commonpb.Payload) (claimcheck.Ref, bool) {
	if !strings.HasSuffix(string(p.GetMetadata()["messageType"]), "ExternalStorageReference") {
		return claimcheck.Ref{}, false
	}
	var sr struct {
		DriverName string            `json:"driverName"`
		ClaimData  map[string]string `json:"claimData"`
	}
	if err := json.Unmarshal(p.GetData(), &sr); err != nil {
		return claimcheck.Ref{}, false
	}
	ref, err := claimcheck.ParseRef([]byte(sr.ClaimData["ref"]))
	return ref, err == nil
}

// The seed's test 11: an activity returns about 1.2 MB of JSON and
// another about 75 KB; the workflow's result is correct and its history
// holds references, each under 1 KB, instead of the payloads.
func TestPhotosWorkflowHistoryHoldsReferences(t *testing.T) {
	ts := temporalServer(t)
	store := openStore(t)
	ctx := context.Background()
	d, err := cctemporal.NewDriver(ctx, store, cctemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := ts.NewClientWithOptions(client.Options{ExternalStorage: d.ExternalStorage()})
	const tq = "photos"
	w := worker.New(c, tq, worker.Options{})
	w.RegisterWorkflow(PhotoWorkflow)
	w.RegisterActivity(FetchPhotos)
	w.RegisterActivity(FetchComments)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	wfID := "photos-" + t.Name()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: tq}, PhotoWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	var got Summary
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if !equalJSON(t, got.Photos, makePhotos(5000)) || !equalJSON(t, got.Comments, makeComments(500)) {
		t.Fatal("workflow result differs from the activities' output")
	}
	photosJSON, _ := json.Marshal(got.Photos)
	commentsJSON, _ := json.Marshal(got.Comments)
	t.Logf("photos %d bytes, comments %d bytes of JSON", len(photosJSON), len(commentsJSON))
	if len(photosJSON) < 1_000_000 || len(commentsJSON) < 60_000 {
		t.Fatalf("test data too small: photos %d, comments %d bytes", len(photosJSON), len(commentsJSON))
	}

	payloads, total := historyPayloads(t, ts.GetDefaultClient(), wfID)
	var refs []claimcheck.Ref
	for _, p := range payloads {
		if n := sizeOf(p); n >= 1024 {
			t.Errorf("history payload of %d bytes (encoding %s): want every payload under 1 KB", n, p.GetMetadata()["encoding"])
		}
		if ref, ok := storedRef(p); ok {
			refs = append(refs, ref)
		}
	}
	// Photos result, comments result, workflow result.
	if len(refs) != 3 {
		t.Fatalf("history holds %d claimcheck references, want 3", len(refs))
	}
	t.Logf("history: %d events' bytes, %d payloads, %d references", total, len(payloads), len(refs))
	for _, ref := range refs {
		info, err := store.Stat(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if info.Labels["temporal.workflow_id"] != wfID || info.Labels["temporal.workflow_type"] != "PhotoWorkflow" {
			t.Errorf("claim %s labels %v: want the workflow's id and type", ref.ID, info.Labels)
		}
		if info.ContentType != cctemporal.PayloadContentType {
			t.Errorf("claim %s content type %q", ref.ID, info.ContentType)
		}
	}
}

// equalJSON compares a and b as JSON documents: object key order does
// not matter, numbers are compared exactly.
func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	return canonical(t, a) == canonical(t, b)
}

func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(x); err != nil { // maps marshal with sorted keys
		t.Fatal(err)
	}
	return string(b)
}

// State is what the four-step pipeline passes from step to step.
type State struct {
	N      int // photos the first step makes
	Step   int
	Photos []Photo
}

// pipelinePhotos is how many photos the pipeline carries: the seed's
// 5,000 (1.1 MB of JSON), or 1,000 (220 KB, still offloaded) in -short
// mode, where -race makes decoding megabytes in workflow code slow enough
// to trip the SDK's deadlock detector (1 s) with the codec.
func pipelinePhotos() int {
	if testing.Short() {
		return 1000
	}
	return 5000
}

// checkStep fails unless the activity got the full output of step n.
func checkStep(s State, n int) error {
	if s.Step != n || s.N == 0 || len(s.Photos) != s.N {
		return fmt.Errorf("step %d got step %d with %d photos, want step %d with %d", n+1, s.Step, len(s.Photos), n, s.N)
	}
	for i, p := range s.Photos {
		if p.ID != i+1 || p.Step != n {
			return fmt.Errorf("step %d: photo %d is %+v, not the output of step %d", n+1, i, p, n)
		}
	}
	return nil
}

func Step(ctx context.Context, in State) (State, error) {
	if in.Step == 0 {
		in.Photos = makePhotos(in.N)
	} else if err := checkStep(in, in.Step); err != nil {
		return State{}, err
	}
	for i := range in.Photos {
		in.Photos[i].Step = in.Step + 1
	}
	in.Step++
	return in, nil
}

func PipelineWorkflow(ctx workflow.Context, n int) (State, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	s := State{N: n}
	for range 4 {
		if err := workflow.ExecuteActivity(ctx, Step, s).Get(ctx, &s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// StepFields is the pipeline step on a JSON state map, with the large
// field offloaded between steps by OffloadFields and restored by
// MaterializeFields (the seed's between-steps offload, for workers that
// use neither the driver nor the codec).
func StepFields(ctx context.Context, in map[string]any) (map[string]any, error) {
	deps := ctx.Value(fieldsDepsKey{}).(fieldsDeps)
	m, err := cctemporal.MaterializeFields(ctx, deps.claims, in)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(m)
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	if s, err = Step(ctx, s); err != nil {
		return nil, err
	}
	b, _ = json.Marshal(s)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	activity.GetLogger(ctx).Info("step done", "step", s.Step)
	return cctemporal.OffloadFields(ctx, deps.claims, cctemporal.Options{}, out)
}

type fieldsDepsKey struct{}
type fieldsDeps struct{ claims claimcheck.Claims }

func PipelineFieldsWorkflow(ctx workflow.Context, n int) (map[string]any, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	s := map[string]any{"Step": 0, "N": n}
	for range 4 {
		if err := workflow.ExecuteActivity(ctx, StepFields, s).Get(ctx, &s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// The seed's test 12: four steps, each passing a large output to the
// next; every activity sees the materialized data and the workflow
// completes without a payload size error; with the External Storage
// driver, with the codec, and with OffloadFields between steps.
func TestFourStepPipeline(t *testing.T) {
	ts := temporalServer(t)
	ctx := context.Background()
	for _, mode := range []string{"driver", "codec", "fields"} {
		t.Run(mode, func(t *testing.T) {
			store := openStore(t)
			var opts client.Options
			wopts := worker.Options{}
			switch mode {
			case "driver":
				d, err := cctemporal.NewDriver(ctx, store, cctemporal.Options{})
				if err != nil {
					t.Fatal(err)
				}
				opts.ExternalStorage = d.ExternalStorage()
			case "codec":
				cd, err := cctemporal.NewCodec(ctx, store, cctemporal.Options{})
				if err != nil {
					t.Fatal(err)
				}
				opts.DataConverter = converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), cd)
			case "fields":
				wopts.BackgroundActivityContext = context.WithValue(ctx, fieldsDepsKey{}, fieldsDeps{claims: store})
			}
			c := ts.NewClientWithOptions(opts)
			tq := "pipeline-" + mode
			w := worker.New(c, tq, wopts)
			w.RegisterWorkflow(PipelineWorkflow)
			w.RegisterWorkflow(PipelineFieldsWorkflow)
			w.RegisterActivity(Step)
			w.RegisterActivity(StepFields)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			wfID := "pipeline-" + mode
			var final State
			if mode == "fields" {
				run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: tq}, PipelineFieldsWorkflow, pipelinePhotos())
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := run.Get(ctx, &m); err != nil {
					t.Fatal(err)
				}
				if m, err = cctemporal.MaterializeFields(ctx, store, m); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(m)
				if err := json.Unmarshal(b, &final); err != nil {
					t.Fatal(err)
				}
			} else {
				run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: tq}, PipelineWorkflow, pipelinePhotos())
				if err != nil {
					t.Fatal(err)
				}
				if err := run.Get(ctx, &final); err != nil {
					t.Fatal(err)
				}
			}
			if err := checkStep(final, 4); err != nil {
				t.Fatal(err)
			}
			payloads, total := historyPayloads(t, ts.GetDefaultClient(), wfID)
			for _, p := range payloads {
				if n := sizeOf(p); n >= 1024 {
					t.Errorf("history payload of %d bytes: want every payload under 1 KB", n)
				}
			}
			t.Logf("%s: history %d bytes in events", mode, total)
		})
	}
}
