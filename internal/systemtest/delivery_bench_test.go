package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// TestMeasureDeliveryLag measures webhook delivery through the server
// (docs/PERFORMANCE.md, "Delivery lag and spread"): the lag from an
// event's time to the receiver's answer at a steady rate of puts (each
// one created event; CLAIMCHECK_BENCH_DELIVERY_RATE, default 1000 a
// second, for CLAIMCHECK_BENCH_DELIVERY_SECONDS, default 20) with one
// subscription in the structured and in the batched mode, then the same
// with a receiver that refuses every request carrying one claim's event
// while that claim gets an event every 100ms (the other claims' lag is
// what counts). Then how many events a second one replica delivers, and
// two, on PostgreSQL: 16 subscriptions replaying a backlog of puts
// (CLAIMCHECK_BENCH_DELIVERY_BACKLOG, default 5000 each). It runs only
// with CLAIMCHECK_BENCH_DELIVERY=1 (=spread: the replicas alone).
func TestMeasureDeliveryLag(t *testing.T) {
	mode := os.Getenv("CLAIMCHECK_BENCH_DELIVERY")
	if mode == "" {
		t.Skip("a measurement: set CLAIMCHECK_BENCH_DELIVERY=1")
	}
	rate, secs, backlog := envInt(t, "CLAIMCHECK_BENCH_DELIVERY_RATE", 1000), envInt(t, "CLAIMCHECK_BENCH_DELIVERY_SECONDS", 20),
		envInt(t, "CLAIMCHECK_BENCH_DELIVERY_BACKLOG", 5000)
	bin := buildBinary(t)
	if mode != "spread" {
		for _, refuse := range []bool{false, true} {
			for _, per := range []int{1, 100} {
				measureLag(t, bin, rate, time.Duration(secs)*time.Second, per, refuse)
			}
		}
	}
	one := measureSpread(t, bin, 1, backlog)
	two := measureSpread(t, bin, 2, backlog)
	t.Logf("delivered from a backlog on PostgreSQL, batched: one replica %.0f events/s, two %.0f events/s (ratio %.2f)", one, two, two/one)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// measureLag runs one lag measurement on SQLite (the embedded defaults).
func measureLag(t *testing.T, bin string, rate int, d time.Duration, per int, refuse bool) {
	rec := newLagReceiver(t)
	srv := benchServer(t, bin, "sqlite", rec.url, per)
	c, err := client.New(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if refuse {
		bad, err := c.Put(ctx, "bench", strings.NewReader("the refused claim"), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec.refuse.Store(bad.ID)
		go func() {
			for ctx.Err() == nil {
				// Each read is an event of the refused claim.
				if p, err := c.Redeem(ctx, bad); err == nil {
					_, _ = io.Copy(io.Discard, p)
					_ = p.Close()
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	start := time.Now()
	puts := steady(t, srv.url, rate, d)
	took := time.Since(start)
	time.Sleep(3 * time.Second) // the last events' deliveries
	p50, p99, n := rec.quantiles()
	t.Logf("SQLite, %d puts in %s (%.0f events/s), up to %d events per request, one claim refused %v: %d other events delivered, lag p50 %s, p99 %s, refused requests %d",
		puts, took.Round(time.Millisecond), float64(puts)/took.Seconds(), per, refuse, n, p50.Round(time.Millisecond), p99.Round(time.Millisecond), rec.refused.Load())
}

// measureSpread starts replicas on one PostgreSQL database with 16
// subscriptions to a counting receiver, puts backlog claims, replays
// every subscription from before them, and returns the events delivered
// a second until all have arrived.
func measureSpread(t *testing.T, bin string, replicas, backlog int) float64 {
	dsn, db := testsvc.Postgres(t)
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ces []json.RawMessage
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &ces)
		got.Add(int64(len(ces)))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	dir := t.TempDir()
	cfg := fmt.Sprintf("metadata: %q\nstorage: %q\nsubscriptions:\n  allow_loopback_targets: true\n  events_per_request: 100\n  batch: 100\n",
		dsn, "file://"+filepath.ToSlash(filepath.Join(dir, "blobs")))
	path := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var rs []*replica
	for range replicas {
		rs = append(rs, startReplica(t, bin, path))
	}
	waitFor(t, "the shards shared out", func() bool {
		h := shardHolders(db)
		for _, r := range rs {
			if h[r.cmd.Process.Pid] != 16/replicas {
				return false
			}
		}
		return true
	})
	c, err := client.New(rs[0].url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	since := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	putBacklog(t, c, backlog)
	const subs = 16
	for i := range subs {
		sub, err := c.CreateSubscription(ctx, claimcheck.SubscriptionSpec{URL: recv.URL, EventFilter: claimcheck.EventFilter{Types: []string{"created"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ReplaySubscription(ctx, sub.ID, since); err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
	}
	start := time.Now()
	want := int64(subs * backlog)
	deadline := start.Add(10 * time.Minute)
	for got.Load() < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	if got.Load() < want {
		t.Fatalf("%d replicas: %d of %d events in %s", replicas, got.Load(), want, took)
	}
	t.Logf("%d replica(s): %d events to %d subscriptions in %s", replicas, want, subs, took.Round(time.Millisecond))
	return float64(want) / took.Seconds()
}

// putBacklog puts n small claims from 16 workers.
func putBacklog(t *testing.T, c *client.Client, n int) {
	var wg sync.WaitGroup
	var next atomic.Int64
	body := bytes.Repeat([]byte("b"), 1024)
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := c.Put(context.Background(), "bench", bytes.NewReader(body), claimcheck.PutOptions{Size: 1024}); err != nil {
					t.Errorf("put: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}
