package engine_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// Benchmarks on the production backends (PostgreSQL + MinIO, started by
// scripts/test.sh or by hand; see docs/PERFORMANCE.md). They skip without
// TEST_DATABASE_URL and TEST_S3_URL.

// openProd opens a store on a fresh PostgreSQL schema and MinIO bucket.
func openProd(b *testing.B, c *clock.Fake, wrap func(blob.Store) blob.Store, pol claimcheck.Policy) (*engine.Store, string) {
	b.Helper()
	dsn, _ := testsvc.Postgres(b)
	storage, _, bucket := testsvc.S3(b)
	cfg := engine.Config{
		Metadata: dsn, Storage: storage,
		Namespaces: map[string]claimcheck.Policy{"bench": pol},
		Sweeper:    sweep.Config{Disabled: true},
		Logger:     slog.New(slog.DiscardHandler),
	}
	if c != nil {
		cfg.Clock = c
	}
	if wrap != nil {
		bs, err := blob.Open(context.Background(), storage)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { bs.Close() })
		cfg.BlobStore = wrap(bs)
	}
	s := enginetest.Open(b, cfg)
	return s, bucket
}

// varied returns data with the iteration number written into it, so no
// two iterations store the same bytes (no dedup, no cache effects).
func varied(data []byte, i int) []byte {
	binary.LittleEndian.PutUint64(data, uint64(i))
	return data
}

// BenchmarkS3PutRedeem1MiB compares a put + redeem of 1 MiB through the
// engine (PostgreSQL metadata, MinIO objects) with the raw AWS SDK's
// PutObject + GetObject of the same bytes on the same MinIO. Each
// iteration does both, one after the other, so that both see the same
// load on a shared machine; it reports each one's time per operation and
// the throughput ratio (raw time / claimcheck time; 1 = as fast as raw).
func BenchmarkS3PutRedeem1MiB(b *testing.B) {
	data := make([]byte, 1<<20)
	rand.Read(data)
	ctx := context.Background()
	s, _ := openProd(b, nil, nil, claimcheck.Policy{Compression: claimcheck.CompressionAuto})
	storage, client, bucket := testsvc.S3(b)
	// The same engine with SQLite metadata, to show the metadata's share.
	lite := enginetest.Open(b, engine.Config{Storage: storage,
		Namespaces: map[string]claimcheck.Policy{"bench": {Compression: claimcheck.CompressionAuto}},
		Sweeper:    sweep.Config{Disabled: true}, Logger: slog.New(slog.DiscardHandler)})
	var onPostgres, engineLite, raw time.Duration
	putRedeem := func(s *engine.Store, data []byte) {
		ref, err := s.Put(ctx, "bench", bytes.NewReader(data), claimcheck.PutOptions{})
		if err != nil {
			b.Fatal(err)
		}
		p, err := s.Redeem(ctx, ref)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, p); err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
	b.SetBytes(3 * int64(len(data)))
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		putRedeem(s, varied(data, 3*i))
		onPostgres += time.Since(start)

		start = time.Now()
		putRedeem(lite, varied(data, 3*i+1))
		engineLite += time.Since(start)

		start = time.Now()
		key := fmt.Sprintf("raw/%d", i)
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: bytes.NewReader(varied(data, 3*i+2)), ContentLength: aws.Int64(int64(len(data)))})
		if err != nil {
			b.Fatal(err)
		}
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, out.Body); err != nil {
			b.Fatal(err)
		}
		out.Body.Close()
		raw += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(onPostgres.Seconds()*1000/n, "claimcheck-ms/op")
	b.ReportMetric(engineLite.Seconds()*1000/n, "sqlite-claimcheck-ms/op")
	b.ReportMetric(raw.Seconds()*1000/n, "raw-ms/op")
	b.ReportMetric(raw.Seconds()/onPostgres.Seconds(), "ratio")
}

// BenchmarkMetaSmallClaims measures small-claim throughput (put + redeem
// of 1 KiB, objects in memory so only the metadata store differs) with
// concurrent callers, on SQLite and on PostgreSQL.
//
// "one-namespace" puts every claim in one namespace, whose counter row
// every put updates (twice) under a row lock; "namespace-per-caller"
// spreads the callers over namespaces, the way several tenants would.
func BenchmarkMetaSmallClaims(b *testing.B) {
	for _, bc := range []struct {
		backend string
		spread  bool
	}{{"sqlite", false}, {"postgres", false}, {"sqlite", true}, {"postgres", true}} {
		name := bc.backend + "/one-namespace"
		if bc.spread {
			name = bc.backend + "/namespace-per-caller"
		}
		b.Run(name, func(b *testing.B) {
			pol := claimcheck.Policy{Threshold: 1, Compression: claimcheck.CompressionNone, Dedup: new(bool)}
			cfg := engine.Config{
				Data: b.TempDir(), Storage: "mem://",
				Defaults: engine.Defaults{Policy: pol},
				Sweeper:  sweep.Config{Disabled: true},
			}
			var callers atomic.Int64
			if bc.backend == "postgres" {
				cfg.Metadata, _ = testsvc.Postgres(b)
			}
			s := enginetest.Open(b, cfg)
			ctx := context.Background()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				data := make([]byte, 1024)
				ns := "bench"
				if bc.spread {
					ns = fmt.Sprintf("bench-%d", callers.Add(1))
				}
				for pb.Next() {
					ref, err := s.Put(ctx, ns, bytes.NewReader(data), claimcheck.PutOptions{})
					if err != nil {
						b.Fatal(err)
					}
					p, err := s.Redeem(ctx, ref)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.Copy(io.Discard, p); err != nil {
						b.Fatal(err)
					}
					p.Close()
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
		})
	}
}

// singleDeleter hides the S3 store's batch delete, so the sweeper sends
// one DeleteObject per object.
type singleDeleter struct{ blob.Store }

// BenchmarkS3SweeperDeletes measures objects deleted per second by the
// sweeper on MinIO, with DeleteObjects batches and with one request per
// object. Each iteration collects objects expired claims left behind.
func BenchmarkS3SweeperDeletes(b *testing.B) {
	const objects = 2000
	for _, mode := range []struct {
		name string
		wrap func(blob.Store) blob.Store
	}{
		{"batched", nil},
		{"one-per-object", func(s blob.Store) blob.Store { return singleDeleter{s} }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			fc := clock.NewFake(time.Now())
			s, _ := openProd(b, fc, mode.wrap, claimcheck.Policy{Threshold: 1, Compression: claimcheck.CompressionNone, Dedup: new(bool),
				TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(time.Hour), GracePeriod: claimcheck.Duration(time.Minute)}})
			ctx := context.Background()
			var collected int
			var spent time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				data := make([]byte, 64)
				for j := range objects {
					if _, err := s.Put(ctx, "bench", bytes.NewReader(varied(data, i*objects+j)), claimcheck.PutOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				fc.Advance(time.Hour + time.Second)
				if _, err := s.SweepOnce(ctx, 0); err != nil { // finish: blobs orphaned
					b.Fatal(err)
				}
				fc.Advance(time.Minute + time.Second)
				b.StartTimer()
				start := time.Now()
				res, err := s.SweepOnce(ctx, 0) // collect: the object deletes
				if err != nil {
					b.Fatal(err)
				}
				spent += time.Since(start)
				collected += objects
				_ = res
			}
			b.ReportMetric(float64(collected)/spent.Seconds(), "objects/s")
		})
	}
}
