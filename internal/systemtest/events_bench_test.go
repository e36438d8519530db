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
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// TestMeasurePushedEvents measures what a subscription costs
// (docs/PERFORMANCE.md, "Pushed events"): put throughput of 1 KiB
// payloads from 16 workers against a server with one subscription to
// every event and one without, side by side in alternating rounds; and
// the delivery lag (event time to the receiver's answer) at p99 under a
// steady load the receiver keeps up with, on SQLite and PostgreSQL. It
// runs only with CLAIMCHECK_BENCH_EVENTS=1 (=throughput: the
// throughput rounds alone; CLAIMCHECK_BENCH_EVENTS_ROUNDS sets their
// number, 10 of 3 seconds by default).
func TestMeasurePushedEvents(t *testing.T) {
	if os.Getenv("CLAIMCHECK_BENCH_EVENTS") == "" {
		t.Skip("a measurement: set CLAIMCHECK_BENCH_EVENTS=1")
	}
	bin := buildBinary(t)
	rec := newLagReceiver(t)

	// Throughput, SQLite: one server without a subscription, one with a
	// subscription delivered an event per request, one delivered in the
	// batched mode (up to 100 events per request). Short rounds, the
	// three servers one after another in a rotating order, so a change
	// of the machine's load (it is shared) falls on all three alike.
	servers := []*replica{
		benchServer(t, bin, "sqlite", "", 0),
		benchServer(t, bin, "sqlite", rec.url, 1),
		benchServer(t, bin, "sqlite", newLagReceiver(t).url, 100),
	}
	rounds, per := 10, 3*time.Second
	if n, err := strconv.Atoi(os.Getenv("CLAIMCHECK_BENCH_EVENTS_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	var puts, secs [3]float64
	ratios := [3][]float64{}
	cpu0 := [3]time.Duration{}
	for i, r := range servers {
		cpu0[i], _ = processCPU(r.cmd.Process.Pid)
	}
	for round := range rounds {
		var rate [3]float64
		for k := range 3 {
			i := (round + k) % 3
			n, d := putCount(t, servers[i].url, 16, per)
			puts[i] += float64(n)
			secs[i] += d.Seconds()
			rate[i] = float64(n) / d.Seconds()
		}
		for i := range 3 {
			ratios[i] = append(ratios[i], rate[i]/rate[0])
		}
	}
	time.Sleep(2 * time.Second) // the last deliveries, so their CPU is counted
	var cpuPerPut [3]time.Duration
	for i, r := range servers {
		c, _ := processCPU(r.cmd.Process.Pid)
		cpuPerPut[i] = (c - cpu0[i]) / time.Duration(max(puts[i], 1))
	}
	rate := func(i int) float64 { return puts[i] / secs[i] }
	spread := func(i int) string {
		r := slices.Clone(ratios[i])
		slices.Sort(r)
		return fmt.Sprintf("median %.3f, rounds %.3f to %.3f", r[len(r)/2], r[0], r[len(r)-1])
	}
	t.Logf("put 1 KiB x16 on SQLite, %d rounds of %s: without %.0f/s; with a subscription to every event %.0f/s (ratio %.3f; %s); batched %.0f/s (ratio %.3f; %s)",
		rounds, per, rate(0), rate(1), rate(1)/rate(0), spread(1), rate(2), rate(2)/rate(0), spread(2))
	t.Logf("server CPU per put (user+system, deliveries included): without %s, one event per request %s (%+.1f%%), batched %s (%+.1f%%)",
		cpuPerPut[0], cpuPerPut[1], 100*(float64(cpuPerPut[1])/float64(cpuPerPut[0])-1),
		cpuPerPut[2], 100*(float64(cpuPerPut[2])/float64(cpuPerPut[0])-1))

	if os.Getenv("CLAIMCHECK_BENCH_EVENTS") == "throughput" {
		return
	}
	// Lag under a steady load, each store and mode.
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, per := range []int{1, 100} {
			// A receiver of its own: the throughput round's server may
			// still be delivering its backlog to the first.
			rec := newLagReceiver(t)
			u := benchServer(t, bin, backend, rec.url, per).url
			puts := steady(t, u, 200, 10*time.Second)
			time.Sleep(2 * time.Second) // the last events' deliveries
			p50, p99, n := rec.quantiles()
			t.Logf("delivery lag on %s at 200 puts/s, up to %d events per request: %d puts, %d events delivered, p50 %s, p99 %s",
				backend, per, puts, n, p50, p99)
		}
	}
}

// lagReceiver records each event's lag (its time to the answer). A
// request carrying an event of the claim in refuse is answered 500 and
// counted in refused; only the other claims' lags are recorded.
type lagReceiver struct {
	url     string
	mu      sync.Mutex
	lags    []time.Duration
	refuse  atomic.Value // string: a claim id
	refused atomic.Int64
}

func newLagReceiver(t *testing.T) *lagReceiver {
	r := &lagReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		type event struct {
			Time    time.Time `json:"time"`
			Subject string    `json:"subject"`
		}
		var ces []event
		if req.Header.Get("Content-Type") == "application/cloudevents-batch+json" {
			_ = json.Unmarshal(body, &ces)
		} else {
			ces = make([]event, 1)
			_ = json.Unmarshal(body, &ces[0])
		}
		if bad, _ := r.refuse.Load().(string); bad != "" && slices.ContainsFunc(ces, func(e event) bool { return e.Subject == bad }) {
			r.refused.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			return
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
func benchServer(t *testing.T, bin, backend, url string, perRequest int) *replica {
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
	return startReplica(t, bin, path)
}

// putCount runs workers putting 1 KiB for d and returns how many puts
// succeeded and how long they took.
func putCount(t *testing.T, url string, workers int, d time.Duration) (int64, time.Duration) {
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
	return n.Load(), time.Since(start)
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
