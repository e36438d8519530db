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
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testsvc"
)

// TestMeasurePushedEvents measures what a subscription costs
// (docs/PERFORMANCE.md, "Pushed events"): put throughput of 1 KiB
// payloads from 16 workers against a server with one subscription to
// every event and one without, side by side in alternating rounds; and
// the delivery lag (event time to the receiver's answer) at p99 under a
// steady load the receiver keeps up with, on SQLite and PostgreSQL. It
// runs only with CLAIMCHECK_BENCH_EVENTS=1.
func TestMeasurePushedEvents(t *testing.T) {
	if os.Getenv("CLAIMCHECK_BENCH_EVENTS") == "" {
		t.Skip("a measurement: set CLAIMCHECK_BENCH_EVENTS=1")
	}
	bin := buildBinary(t)
	rec := newLagReceiver(t)

	// Throughput, SQLite: one server without a subscription, one with a
	// subscription delivered an event per request, one delivered in the
	// batched mode (up to 100 events per request).
	without := benchServer(t, bin, "sqlite", "", 0)
	with := benchServer(t, bin, "sqlite", rec.url, 1)
	batched := benchServer(t, bin, "sqlite", newLagReceiver(t).url, 100)
	var opsWith, opsWithout, opsBatched float64
	for range 3 {
		opsWithout += putRate(t, without, 16, 5*time.Second)
		opsWith += putRate(t, with, 16, 5*time.Second)
		opsBatched += putRate(t, batched, 16, 5*time.Second)
	}
	t.Logf("put 1 KiB x16 on SQLite: without %.0f/s, with a subscription to every event %.0f/s (ratio %.3f), batched %.0f/s (ratio %.3f)",
		opsWithout/3, opsWith/3, opsWith/opsWithout, opsBatched/3, opsBatched/opsWithout)

	// Lag under a steady load, each store and mode.
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, per := range []int{1, 100} {
			// A receiver of its own: the throughput round's server may
			// still be delivering its backlog to the first.
			rec := newLagReceiver(t)
			u := benchServer(t, bin, backend, rec.url, per)
			puts := steady(t, u, 200, 10*time.Second)
			time.Sleep(2 * time.Second) // the last events' deliveries
			p50, p99, n := rec.quantiles()
			t.Logf("delivery lag on %s at 200 puts/s, up to %d events per request: %d puts, %d events delivered, p50 %s, p99 %s",
				backend, per, puts, n, p50, p99)
		}
	}
}

type lagReceiver struct {
	url  string
	mu   sync.Mutex
	lags []time.Duration
}

func newLagReceiver(t *testing.T) *lagReceiver {
	r := &lagReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		type event struct {
			Time time.Time `json:"time"`
		}
		var ces []event
		if req.Header.Get("Content-Type") == "application/cloudevents-batch+json" {
			_ = json.Unmarshal(body, &ces)
		} else {
			ces = make([]event, 1)
			_ = json.Unmarshal(body, &ces[0])
		}
		r.mu.Lock()
		for _, ce := range ces {
			r.lags = append(r.lags, time.Since(ce.Time))
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hook"
	return r
}

func (r *lagReceiver) quantiles() (p50, p99 time.Duration, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := slices.Clone(r.lags)
	slices.Sort(l)
	if len(l) == 0 {
		return 0, 0, 0
	}
	return l[len(l)/2], l[len(l)*99/100], len(l)
}

// benchServer starts a server on SQLite or PostgreSQL, with a
// subscription to every event at url when perRequest is above 0,
// delivered that many events per request at most.
func benchServer(t *testing.T, bin, backend, url string, perRequest int) string {
	t.Helper()
	dir := t.TempDir()
	metadata := "sqlite:" + filepath.Join(dir, "meta.db")
	if backend == "postgres" {
		metadata, _ = testsvc.Postgres(t)
	}
	cfg := fmt.Sprintf("metadata: %q\nstorage: %q\nsubscriptions:\n  allow_loopback_targets: true\n  events_per_request: %d\n",
		metadata, "file://"+filepath.ToSlash(filepath.Join(dir, "blobs")), max(perRequest, 1))
	if perRequest > 0 {
		cfg += fmt.Sprintf("  targets:\n    - {id: all, url: %q, secret: %q}\n", url, "whsec_"+"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	}
	path := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return startReplica(t, bin, path).url
}

// putRate runs workers putting 1 KiB for d and returns puts a second.
func putRate(t *testing.T, url string, workers int, d time.Duration) float64 {
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("k"), 1024)
	var n atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := c.Put(ctx, "bench", bytes.NewReader(body), claimcheck.PutOptions{Size: 1024}); err == nil {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

// steady puts rate payloads a second for d and returns how many
// succeeded.
func steady(t *testing.T, url string, rate int, d time.Duration) int64 {
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("s"), 1024)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	var n atomic.Int64
	for time.Now().Before(end) {
		<-tick.C
		wg.Go(func() {
			if _, err := c.Put(context.Background(), "bench", bytes.NewReader(body), claimcheck.PutOptions{Size: 1024}); err == nil {
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return n.Load()
}
