package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"google.golang.org/api/option"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/benchdata"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// BenchmarkVersusCloudEmulators compares claimcheck on Google Cloud
// Storage and Azure Blob Storage with each cloud's own Go SDK, on the
// emulators scripts/fakegcs.sh and scripts/azurite.sh start: the same
// bytes put and read back through `claimcheck serve` (storage gs:// or
// azblob://, PostgreSQL when TEST_DATABASE_URL is set) and the Go
// client, and through the SDK writing and reading an object of the same
// emulator, interleaved round by round. Fresh bytes every round. It
// reports ratio = the SDK's time / claimcheck's time (above 1,
// claimcheck is faster) and ratio-p50 from the median rounds.
//
//	go test -run '^$' -bench VersusCloudEmulators -benchtime 20x ./internal/systemtest
func BenchmarkVersusCloudEmulators(b *testing.B) {
	bin := buildBinary(b)
	ctx := context.Background()
	type cloud struct {
		name    string
		storage string
		raw     func(key string, p []byte) error // put, then read back
	}
	var clouds []cloud
	if os.Getenv("TEST_GCS_URL") != "" {
		u := testsvc.GCS(b)
		pu, _ := url.Parse(u)
		gc, err := storage.NewClient(ctx, option.WithEndpoint(pu.Query().Get("endpoint")+"/storage/v1/"), option.WithoutAuthentication())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = gc.Close() })
		bh := gc.Bucket(pu.Host)
		clouds = append(clouds, cloud{"gcs", u, func(key string, p []byte) error {
			w := bh.Object(key).NewWriter(ctx)
			if _, err := w.Write(p); err != nil {
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
			r, err := bh.Object(key).NewReader(ctx)
			if err != nil {
				return err
			}
			defer r.Close()
			return readAll(r, len(p))
		}})
	}
	if os.Getenv("TEST_AZURE_URL") != "" {
		u := testsvc.Azure(b)
		pu, _ := url.Parse(u)
		ac, err := azblob.NewClientFromConnectionString(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
		if err != nil {
			b.Fatal(err)
		}
		clouds = append(clouds, cloud{"azure", u, func(key string, p []byte) error {
			if _, err := ac.UploadBuffer(ctx, pu.Host, key, p, nil); err != nil {
				return err
			}
			out, err := ac.DownloadStream(ctx, pu.Host, key, nil)
			if err != nil {
				return err
			}
			defer out.Body.Close()
			return readAll(out.Body, len(p))
		}})
	}
	if len(clouds) == 0 {
		b.Skip("neither TEST_GCS_URL nor TEST_AZURE_URL is set (scripts/fakegcs.sh, scripts/azurite.sh)")
	}
	for _, cl := range clouds {
		config := fmt.Sprintf("storage: %q\n", cl.storage)
		if os.Getenv("TEST_DATABASE_URL") != "" {
			dsn, _ := testsvc.Postgres(b)
			config += fmt.Sprintf("metadata: %q\n", dsn)
		}
		dir := b.TempDir()
		cfg := filepath.Join(dir, "claimcheck.yaml")
		if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
			b.Fatal(err)
		}
		u, _ := startServerProcess(b, bin, dir, "--data", dir, "--config", cfg)
		c, err := client.New(u)
		if err != nil {
			b.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			json bool
		}{{"json-1MiB", true}, {"random-1MiB", false}} {
			b.Run(cl.name+"/"+tc.name, func(b *testing.B) {
				var base []byte
				if tc.json {
					base = benchdata.JSONRecords(1 << 20)
				} else {
					base = make([]byte, 1<<20)
					rand.Read(base)
				}
				fresh := func() []byte {
					p := bytes.Clone(base)
					binary.LittleEndian.PutUint64(p[len(p)-8:], benchSeq.Add(1))
					return p
				}
				var sdk, cc []time.Duration
				for b.Loop() {
					p := fresh()
					start := time.Now()
					if err := cl.raw(fmt.Sprintf("bench/%d", benchSeq.Load()), p); err != nil {
						b.Fatal(err)
					}
					sdk = append(sdk, time.Since(start))
					p = fresh()
					start = time.Now()
					ref, err := c.Put(ctx, "bench", bytes.NewReader(p), claimcheck.PutOptions{})
					if err != nil {
						b.Fatal(err)
					}
					r, err := c.Redeem(ctx, ref)
					if err != nil {
						b.Fatal(err)
					}
					err = readAll(r, len(p))
					_ = r.Close()
					if err != nil {
						b.Fatal(err)
					}
					cc = append(cc, time.Since(start))
				}
				sum := func(ds []time.Duration) (t time.Duration) {
					for _, d := range ds {
						t += d
					}
					return t
				}
				median := func(ds []time.Duration) time.Duration {
					ds = slices.Clone(ds)
					slices.Sort(ds)
					return ds[len(ds)/2]
				}
				n := float64(len(cc))
				b.ReportMetric(sum(sdk).Seconds()*1000/n, "sdk-ms")
				b.ReportMetric(sum(cc).Seconds()*1000/n, "claimcheck-ms")
				b.ReportMetric(sum(sdk).Seconds()/sum(cc).Seconds(), "ratio")
				b.ReportMetric(median(sdk).Seconds()/median(cc).Seconds(), "ratio-p50")
			})
		}
	}
}
