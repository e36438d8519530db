package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/livefill"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// TestMeasureSweeperBacklog measures the running server's sweeper on its
// defaults (docs/PERFORMANCE.md, "A sweeper that keeps up by itself"), on
// SQLite and then PostgreSQL (TEST_DATABASE_URL):
//
//   - idle drain: a backlog of due claims, each on its own blob, appears
//     at once (one bulk insert); the time until the sweeper has finished
//     every claim, and until it has collected every blob;
//   - under traffic: redeems of 1 KiB claims at a steady rate, in windows
//     that alternate between nothing due (the reference) and claims coming
//     due at 1000/s; redeem p50/p99 of each kind of window side by side,
//     the largest due lag seen, and the pace.
//
// It runs with CLAIMCHECK_BENCH_SWEEPER=1 (10^6 claims;
// CLAIMCHECK_BENCH_SWEEPER_CLAIMS sets another count). The backlog's rows
// are inserted directly (sweepSeed); their objects are not written, so a
// blob's collection deletes an object that is not there (the file
// backend answers not found, which counts as deleted).
func TestMeasureSweeperBacklog(t *testing.T) {
	if os.Getenv("CLAIMCHECK_BENCH_SWEEPER") == "" {
		t.Skip("a measurement: set CLAIMCHECK_BENCH_SWEEPER=1")
	}
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("CLAIMCHECK_BENCH_SWEEPER_CLAIMS")); err == nil && v > 0 {
		n = v
	}
	bin := buildBinary(t)
	for _, backend := range []string{"sqlite", "postgres"} {
		if backend == "postgres" && os.Getenv("TEST_DATABASE_URL") == "" {
			t.Log("postgres: skipped, TEST_DATABASE_URL is not set")
			continue
		}
		t.Run(backend, func(t *testing.T) {
			srv := newSweepServer(t, bin, backend)
			claims, blobs := srv.drain(t, n, 20*time.Minute)
			t.Logf("%s idle drain of %d due claims: claims finished in %s (%.0f/s), blobs collected in %s, max pace %.0f/s; load %s",
				backend, n, claims.Round(time.Second), float64(n)/claims.Seconds(), blobs.Round(time.Second), srv.maxPace, loadAvg())
			srv.traffic(t, 200, 1000, 30*time.Second, 2)
		})
	}
}

// TestSweeperDrainsBacklogOnDefaults is the short form CI runs: a
// server with default settings drains a backlog of 10^4 due claims
// without traffic, and keeps up with claims coming due at 1000/s under
// redeem traffic, on SQLite (and PostgreSQL with TEST_DATABASE_URL).
func TestSweeperDrainsBacklogOnDefaults(t *testing.T) {
	bin := buildBinary(t)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "postgres" && os.Getenv("TEST_DATABASE_URL") == "" {
				t.Skip("TEST_DATABASE_URL is not set")
			}
			srv := newSweepServer(t, bin, backend)
			claims, blobs := srv.drain(t, 10_000, 2*time.Minute)
			t.Logf("idle drain of 10^4 due claims: claims finished in %s, blobs collected in %s, max pace %.0f/s; load %s",
				claims.Round(time.Second), blobs.Round(time.Second), srv.maxPace, loadAvg())
			if srv.maxPace <= 100 {
				t.Errorf("pace gauge at most %v during the drain: the pace must grow with the backlog", srv.maxPace)
			}
			srv.traffic(t, 50, 1000, 5*time.Second, 1)
		})
	}
}

// sweepServer is a `claimcheck serve` on default settings with a direct
// connection to its metadata database.
type sweepServer struct {
	url     string
	rep     *replica
	db      *sql.DB
	pg      bool
	ns      int // backlogs seeded so far (each in its own namespace)
	maxPace float64
}

func newSweepServer(t *testing.T, bin, backend string) *sweepServer {
	t.Helper()
	dir := t.TempDir()
	s := &sweepServer{pg: backend == "postgres"}
	var metadata string
	if s.pg {
		metadata, s.db = testsvc.Postgres(t)
	} else {
		path := filepath.Join(dir, "meta.db")
		metadata = "sqlite:" + path
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(60000)&_pragma=journal_mode(WAL)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = db.Close() })
		s.db = db
	}
	cfg := fmt.Sprintf("metadata: %q\nstorage: %q\n", metadata, "file://"+filepath.ToSlash(filepath.Join(dir, "blobs")))
	path := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s.rep = startReplica(t, bin, path) // the schema exists once it serves
	s.url = s.rep.url
	return s
}

// seed inserts n active claims of a new namespace, claim i due at
// due(i), each on its own committed blob (1000 bytes) whose grace period
// is a second, in one transaction, and returns the namespace.
func (s *sweepServer) seed(t *testing.T, n int, due func(i int) time.Time) string {
	t.Helper()
	s.ns++
	ns := fmt.Sprintf("backlog%d", s.ns)
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	exec := func(q string, args ...any) {
		if _, err := tx.ExecContext(ctx, livefill.Rebind(s.pg, q), args...); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	created := time.Now().UnixNano()
	exec(`INSERT INTO namespaces (name, used_bytes, active_claims) VALUES (?, ?, ?)`, ns, int64(n)*1000, n)
	const chunk = 500
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		var blobArgs, claimArgs []any
		for i := lo; i < hi; i++ {
			id := fmt.Sprintf("%s%012d", ns, i)
			d := due(i).UnixNano()
			blobArgs = append(blobArgs, "b_"+id, "sha256:"+id, ns+"/b_"+id, created, created)
			claimArgs = append(claimArgs, "cc_"+id, "b_"+id, created, d, d)
		}
		rows := func(row string) string { return strings.TrimSuffix(strings.Repeat(row+", ", hi-lo), ", ") }
		exec(`INSERT INTO blobs (id, namespace, digest, dedupable, size, stored_size, compression, object_key, state,
			refcount, created_at, state_at, collect_at, version) VALUES `+
			rows(`(?, '`+ns+`', ?, 1, 1000, 1000, 'none', ?, 'committed', 1, ?, ?, NULL, 1)`), blobArgs...)
		exec(`INSERT INTO claims (id, namespace, blob_id, state, size, reserved_bytes, created_at, expires_at, due_at,
			due_reason, grace_period, consumers) VALUES `+
			rows(`(?, '`+ns+`', ?, 'active', 1000, 1000, ?, ?, ?, 'expired', `+strconv.FormatInt(int64(time.Second), 10)+`, 1)`), claimArgs...)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return ns
}

// scrape reads the sweeper's metrics from the server.
func (s *sweepServer) scrape(t *testing.T) (claims, blobs, lag, pace float64) {
	t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case `claimcheck_sweeper_items_total{kind="claim"}`:
			claims = v
		case `claimcheck_sweeper_items_total{kind="blob"}`:
			blobs = v
		case "claimcheck_sweeper_lag_seconds":
			lag = v
		case "claimcheck_sweeper_pace_items_per_second":
			pace = v
		}
	}
	s.maxPace = max(s.maxPace, pace)
	return claims, blobs, lag, pace
}

// drain seeds a backlog of n claims due over the past hour and waits,
// sending no request but metric scrapes (which are not operations), until
// the sweeper has finished them all and collected their blobs. It returns
// both durations from the moment the backlog appeared.
func (s *sweepServer) drain(t *testing.T, n int, limit time.Duration) (claims, blobs time.Duration) {
	t.Helper()
	c0, b0, _, _ := s.scrape(t)
	now := time.Now()
	s.seed(t, n, func(i int) time.Time { return now.Add(-time.Hour + time.Duration(i)*time.Hour/time.Duration(n)) })
	start := time.Now()
	last := start
	for {
		c, b, lag, pace := s.scrape(t)
		if time.Since(last) >= time.Minute {
			last = time.Now()
			t.Logf("after %s: %.0f claims finished, %.0f blobs collected, lag %.0fs, pace %.0f/s; load %s",
				time.Since(start).Round(time.Second), c-c0, b-b0, lag, pace, loadAvg())
		}
		if claims == 0 && c-c0 >= float64(n) {
			claims = time.Since(start)
		}
		if b-b0 >= float64(n) {
			return claims, time.Since(start)
		}
		if time.Since(start) > limit {
			logs := s.rep.log()
			t.Fatalf("after %s the sweeper finished %.0f and collected %.0f of %d; the server's log ends:\n%s",
				limit, c-c0, b-b0, n, logs[max(0, len(logs)-4000):])
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// traffic runs redeems at rate per second in windows of w, alternating
// rounds times between a reference window (nothing comes due) and a
// window in which claims come due at due per second, and logs redeem
// latency of each kind side by side, the largest lag seen and the pace.
// It fails if the sweeper has not caught up with the claims that came
// due a minute after the last window.
func (s *sweepServer) traffic(t *testing.T, rate, due int, w time.Duration, rounds int) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(s.url)
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("r"), 1024)
	refs := make([]claimcheck.Ref, 200)
	for i := range refs {
		if refs[i], err = c.Put(ctx, "traffic", bytes.NewReader(body), claimcheck.PutOptions{Size: 1024}); err != nil {
			t.Fatal(err)
		}
	}
	// The expiries of every window, seeded before the first: window k
	// (odd) has claims due at `due` per second from its start.
	start := time.Now().Add(5 * time.Second)
	per := int(float64(due) * w.Seconds())
	var expiring int
	for k := 1; k < 2*rounds; k += 2 {
		from := start.Add(time.Duration(k) * w)
		s.seed(t, per, func(i int) time.Time { return from.Add(time.Duration(i) * time.Second / time.Duration(due)) })
		expiring += per
	}
	c0, _, _, _ := s.scrape(t)
	time.Sleep(time.Until(start))
	var ref, exp []time.Duration
	var maxLag float64
	for k := range 2 * rounds {
		lat, lag := s.redeemWindow(t, c, refs, rate, w)
		if k%2 == 0 {
			ref = append(ref, lat...)
		} else {
			exp = append(exp, lat...)
			maxLag = max(maxLag, lag)
		}
	}
	var done float64
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if done, _, _, _ = s.scrape(t); done-c0 >= float64(expiring) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	rp50, rp99 := quantiles(ref)
	ep50, ep99 := quantiles(exp)
	t.Logf("redeems at %d/s, windows of %s: nothing due p50 %s p99 %s (%d redeems); %d claims/s coming due p50 %s p99 %s (%d redeems); p99 ratio %.2f; max lag %.1fs, max pace %.0f/s; load %s",
		rate, w, rp50, rp99, len(ref), due, ep50, ep99, len(exp), float64(ep99)/float64(rp99), maxLag, s.maxPace, loadAvg())
	if done-c0 < float64(expiring) {
		t.Fatalf("a minute after the last window the sweeper had finished %.0f of the %d claims that came due", done-c0, expiring)
	}
}

// redeemWindow redeems random refs at rate per second for d and returns
// the latencies, and the largest due lag the metrics showed meanwhile.
func (s *sweepServer) redeemWindow(t *testing.T, c *client.Client, refs []claimcheck.Ref, rate int, d time.Duration) ([]time.Duration, float64) {
	t.Helper()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var maxLag float64
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_, _, lag, _ := s.scrape(t)
				mu.Lock()
				maxLag = max(maxLag, lag)
				mu.Unlock()
			}
		}
	})
	tick := time.NewTicker(time.Second / time.Duration(rate))
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		<-tick.C
		ref := refs[rand.IntN(len(refs))]
		wg.Go(func() {
			t0 := time.Now()
			p, err := c.Redeem(context.Background(), ref)
			if err != nil {
				t.Error(err)
				return
			}
			_, err = io.Copy(io.Discard, p)
			p.Close()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			lat = append(lat, time.Since(t0))
			mu.Unlock()
		})
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	return lat, maxLag
}

func quantiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[len(d)/2].Round(10 * time.Microsecond), d[len(d)*99/100].Round(10 * time.Microsecond)
}

// loadAvg is the machine's 1-minute load average, which every figure of
// a shared machine is read against.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}
