package temporal_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// rawS3Driver is the baseline: a StorageDriver that does only PutObject
// and GetObject with the AWS SDK, nothing else (no metadata, no digest,
// no lifecycle).
type rawS3Driver struct {
	c      *s3.Client
	bucket string
	n      atomic.Int64
}

func (d *rawS3Driver) Name() string { return "raw-s3" }
func (d *rawS3Driver) Type() string { return "raw-s3" }

func (d *rawS3Driver) Store(ctx converter.StorageDriverStoreContext, ps []*commonpb.Payload) ([]converter.StorageDriverClaim, error) {
	out := make([]converter.StorageDriverClaim, len(ps))
	for i, p := range ps {
		data, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		key := fmt.Sprintf("raw/%d", d.n.Add(1))
		if _, err := d.c.PutObject(ctx.Context, &s3.PutObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(key),
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}); err != nil {
			return nil, err
		}
		out[i] = converter.StorageDriverClaim{ClaimData: map[string]string{"key": key}}
	}
	return out, nil
}

func (d *rawS3Driver) Retrieve(ctx converter.StorageDriverRetrieveContext, cs []converter.StorageDriverClaim) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(cs))
	for i, c := range cs {
		o, err := d.c.GetObject(ctx.Context, &s3.GetObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(c.ClaimData["key"])})
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(o.Body)
		o.Body.Close()
		if err != nil {
			return nil, err
		}
		var p commonpb.Payload
		if err := proto.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		out[i] = &p
	}
	return out, nil
}

// BenchmarkDriverS3StoreRetrieve1MiB stores and retrieves 1 MiB payloads
// through the claimcheck driver (metadata in PostgreSQL when
// TEST_DATABASE_URL is set, SQLite otherwise; objects in MinIO) and
// through the bare AWS SDK driver on the same MinIO. Every iteration does
// both back to back, so both see the same load on a shared machine; it
// reports each one's time per round trip and ratio = raw / claimcheck
// (1 is parity, higher is better). It skips without TEST_S3_URL.
func BenchmarkDriverS3StoreRetrieve1MiB(b *testing.B) {
	data := make([]byte, 1<<20)
	rand.Read(data)
	ctx := context.Background()
	payload := func(i int) *commonpb.Payload {
		binary.LittleEndian.PutUint64(data, uint64(i)) // no two iterations alike: no dedup
		return &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("binary/plain")}, Data: data}
	}
	roundTrip := func(b *testing.B, d converter.StorageDriver, i int) time.Duration {
		start := time.Now()
		cs, err := d.Store(converter.StorageDriverStoreContext{Context: ctx}, []*commonpb.Payload{payload(i)})
		if err != nil {
			b.Fatal(err)
		}
		ps, err := d.Retrieve(converter.StorageDriverRetrieveContext{Context: ctx}, cs)
		if err != nil {
			b.Fatal(err)
		}
		if len(ps[0].Data) != len(data) {
			b.Fatalf("retrieved %d bytes", len(ps[0].Data))
		}
		return time.Since(start)
	}

	storage, _, _ := testsvc.S3(b)
	cfg := engine.Config{
		Data: b.TempDir(), Storage: storage,
		Defaults: engine.Defaults{Policy: claimcheck.Policy{Compression: claimcheck.CompressionAuto}},
		Sweeper:  sweep.Config{Disabled: true},
	}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		cfg.Metadata, _ = testsvc.Postgres(b)
	}
	s := enginetest.Open(b, cfg)
	cc, err := cctemporal.NewDriver(ctx, s, cctemporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	_, c, bucket := testsvc.S3(b)
	raw := &rawS3Driver{c: c, bucket: bucket}

	var tc, tr time.Duration
	b.SetBytes(int64(2 * len(data)))
	for i := 0; b.Loop(); i++ {
		tc += roundTrip(b, cc, 2*i)
		tr += roundTrip(b, raw, 2*i+1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tc.Milliseconds())/n, "claimcheck-ms/op")
	b.ReportMetric(float64(tr.Milliseconds())/n, "raw-ms/op")
	b.ReportMetric(float64(tr)/float64(tc), "ratio")
}

// TestHistoryBytesWithAndWithoutDriver runs the photo workflow (the
// seed's test 11) with and without the driver and reports the history
// size of each (docs/PERFORMANCE-HISTORY.md, "Temporal: External
// Storage driver").
func TestHistoryBytesWithAndWithoutDriver(t *testing.T) {
	ts := temporalServer(t)
	store := openStore(t)
	ctx := context.Background()
	d, err := cctemporal.NewDriver(ctx, store, cctemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for _, mode := range []string{"without", "with"} {
		var opts client.Options
		if mode == "with" {
			opts.ExternalStorage = d.ExternalStorage()
		}
		c := ts.NewClientWithOptions(opts)
		tq := "history-bytes-" + mode
		w := worker.New(c, tq, worker.Options{})
		w.RegisterWorkflow(PhotoWorkflow)
		w.RegisterActivity(FetchPhotos)
		w.RegisterActivity(FetchComments)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		wfID := "history-bytes-" + mode
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: tq}, PhotoWorkflow)
		if err != nil {
			t.Fatal(err)
		}
		var s Summary
		err = run.Get(ctx, &s)
		w.Stop()
		if err != nil {
			t.Fatal(err)
		}
		_, sizes[mode] = historyPayloads(t, ts.GetDefaultClient(), wfID)
	}
	t.Logf("history of the photo workflow: %d bytes without the driver, %d bytes with it (%.2f%%)",
		sizes["without"], sizes["with"], 100*float64(sizes["with"])/float64(sizes["without"]))
	if sizes["with"]*100 > sizes["without"] {
		t.Fatalf("history with the driver is %d bytes, more than 1%% of %d", sizes["with"], sizes["without"])
	}
}
