package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/sweep"
)

// gcStressOps is the number of operations of TestGCStress: 10,000 by
// default (1,500 under the race detector), more with CLAIMCHECK_GC_STRESS_OPS (the long
// run in docs/PERFORMANCE-HISTORY.md, "Dedup and garbage collection", uses
// 1,000,000).
func gcStressOps(t *testing.T) int {
	if v := os.Getenv("CLAIMCHECK_GC_STRESS_OPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("CLAIMCHECK_GC_STRESS_OPS=%q: want a positive number", v)
		}
		return n
	}
	if raceDetector {
		// modernc's SQLite is transpiled C: under the race detector every
		// transaction costs ~30x more, and 10,000 operations take over
		// five minutes. The race run checks the interleavings with fewer
		// operations; the full-size stress pass (no -race) runs 10,000.
		return 1_500
	}
	return 10_000
}

// cancelAfter is a body that cancels its put's context after n bytes: a
// client crash in the middle of the upload.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
		return 0, context.Canceled
	}
	if len(p) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}

// TestGCStress is the randomised concurrency harness of the GC: many
// goroutines put the same few payloads (streamed and digest-first),
// redeem, release, delete, move the fake clock, sweep, prune finished
// rows past the history retention and run the backstop, with crashes
// injected by cancelling contexts at random points. Checked throughout:
// every redeem of a claim that is still live returns its exact bytes (so
// no blob a live claim references was ever deleted). Checked at the end:
// once every claim is finished, grace plus one sweep leave no blob row
// undeleted and no object in the bucket.
//
// It runs on SQLite and, when the test services are up, on PostgreSQL,
// where the workers' transactions really run at once and row locks, not
// one writer, serialise dedup against collection (docs/ARCHITECTURE.md, "Collect").
func TestGCStress(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		gcStress(t, "sqlite:"+filepath.Join(t.TempDir(), "claimcheck.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, _ := testsvc.Postgres(t)
		gcStress(t, dsn)
	})
}

func gcStress(t *testing.T, metadata string) {
	ops := gcStressOps(t)
	ctx := context.Background()
	dir := t.TempDir()
	m, err := sqlmeta.Open(ctx, metadata)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	const grace, maxAge, confirm = 10 * time.Minute, 2 * time.Hour, 5 * time.Minute
	// Finished claims and collected blobs are pruned 30 minutes (of fake
	// time) after they end, in the middle of the traffic.
	const history = 30 * time.Minute
	fc := clock.NewFake(t0)
	s := enginetest.Open(t, engine.Config{
		Data: dir, Clock: fc, MetaStore: m,
		Namespaces: map[string]claimcheck.Policy{"s": {
			Compression: claimcheck.CompressionNone,
			TTL:         claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(maxAge), GracePeriod: claimcheck.Duration(grace)},
			Uploads:     claimcheck.UploadPolicy{ConfirmWithin: claimcheck.Duration(confirm), URLTTL: claimcheck.Duration(time.Minute)},
		}},
		Sweeper: sweepConfigForStress(),
		History: engine.HistoryConfig{Retention: claimcheck.Retention(history)},
	})

	payloads := make([][]byte, 12)
	for i := range payloads {
		r := mrand.New(mrand.NewPCG(uint64(i), 7))
		payloads[i] = make([]byte, 512+r.IntN(4096))
		for j := range payloads[i] {
			payloads[i][j] = byte(r.Uint32())
		}
	}
	digests := make([]string, len(payloads))
	for i, p := range payloads {
		digests[i] = claimcheck.DigestOf(p)
	}

	// pool holds the live claims; a worker takes one out to use it, so
	// no other worker finishes it meanwhile.
	type live struct {
		ref claimcheck.Ref
		idx int
	}
	var (
		mu     sync.Mutex
		pool   []live
		done   atomic.Int64
		fails  atomic.Int64
		stats  [8]atomic.Int64
		pruned [2]atomic.Int64 // claims, blobs
	)
	take := func(r *mrand.Rand) (live, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(pool) == 0 {
			return live{}, false
		}
		i := r.IntN(len(pool))
		l := pool[i]
		pool[i] = pool[len(pool)-1]
		pool = pool[:len(pool)-1]
		return l, true
	}
	poolLen := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(pool)
	}
	give := func(l live) {
		mu.Lock()
		pool = append(pool, l)
		mu.Unlock()
	}
	failf := func(format string, args ...any) {
		if fails.Add(1) <= 10 {
			t.Errorf(format, args...)
		}
	}
	// expired reports that the claim may have ended by its deadline.
	expired := func(ref claimcheck.Ref) bool { return !fc.Now().Before(ref.ExpiresAt) }
	// ended reports that err is what a claim that ended by its deadline
	// may answer: gone, or not found once its row may have been pruned.
	ended := func(err error, ref claimcheck.Ref) bool {
		return errors.Is(err, claimcheck.ErrGone) && expired(ref) ||
			errors.Is(err, claimcheck.ErrNotFound) && !fc.Now().Before(ref.ExpiresAt.Add(history))
	}

	began := time.Now()
	worker := func(seed uint64) {
		r := mrand.New(mrand.NewPCG(seed, 1))
		for {
			n := done.Add(1)
			if n > int64(ops) || fails.Load() > 0 {
				return
			}
			if n%100_000 == 0 {
				// Long runs report progress, so a reader sees how far one got.
				t.Logf("%d operations after %s, %d claims live", n, time.Since(began).Round(time.Second), poolLen())
			}
			switch k := r.IntN(100); {
			case k < 40: // put the same bytes as others
				stats[0].Add(1)
				idx := r.IntN(len(payloads))
				opts := claimcheck.PutOptions{}
				if r.IntN(3) == 0 {
					opts.Digest, opts.Size = digests[idx], int64(len(payloads[idx]))
				}
				pctx, cancel := context.WithCancel(ctx)
				var body io.Reader = bytes.NewReader(payloads[idx])
				crash := r.IntN(10) == 0
				if crash {
					body = &cancelAfter{r: body, n: r.IntN(len(payloads[idx])), cancel: cancel}
				}
				ref, err := s.Put(pctx, "s", body, opts)
				cancel()
				switch {
				case err == nil:
					give(live{ref, idx})
				case crash && errors.Is(err, context.Canceled):
					stats[6].Add(1)
				case errors.Is(err, claimcheck.ErrGone):
					// The upload outlived its deadline (the clock moved).
				default:
					failf("put: %v", err)
				}
			case k < 65: // redeem a live claim: the exact bytes
				l, ok := take(r)
				if !ok {
					continue
				}
				stats[1].Add(1)
				p, err := s.Redeem(ctx, l.ref)
				var got []byte
				if err == nil {
					got, err = p.Bytes()
				}
				switch {
				case err == nil && bytes.Equal(got, payloads[l.idx]):
					give(l)
				case ended(err, l.ref):
					// ended by its deadline: no longer live
				default:
					failf("redeem of live claim %s (payload %d): %d bytes, %v", l.ref.ID, l.idx, len(got), err)
				}
			case k < 75: // release or delete: the claim ends
				l, ok := take(r)
				if !ok {
					continue
				}
				stats[2].Add(1)
				var err error
				if r.IntN(2) == 0 {
					err = s.Release(ctx, l.ref, "")
				} else {
					err = s.Delete(ctx, l.ref)
				}
				if err != nil && !ended(err, l.ref) {
					failf("finish %s: %v", l.ref.ID, err)
				}
			case k < 82: // time passes
				stats[3].Add(1)
				fc.Advance(time.Duration(r.IntN(60)) * time.Second)
			case k < 98: // collect, sometimes crashing mid-run
				stats[4].Add(1)
				cctx, cancel := context.WithCancel(ctx)
				stop := func() bool { return false }
				if r.IntN(4) == 0 {
					stop = time.AfterFunc(time.Duration(r.IntN(2000))*time.Microsecond, cancel).Stop
				}
				// A cancelled run fails however the database reports it.
				if _, err := s.SweepOnce(cctx, 50+r.IntN(200)); err != nil && cctx.Err() == nil {
					failf("sweep: %v", err)
				}
				stop()
				cancel()
			case k < 99: // prune finished rows older than the history retention
				stats[7].Add(1)
				claims, blobs, err := s.Sweeper().PruneHistory(ctx, 1)
				if err != nil {
					failf("prune history: %v", err)
				}
				pruned[0].Add(int64(claims))
				pruned[1].Add(int64(blobs))
			default: // a backstop page
				stats[5].Add(1)
				if _, err := s.Sweeper().Backstop().Run(ctx, 1); err != nil {
					failf("backstop: %v", err)
				}
			}
		}
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { worker(uint64(i)) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d ops: puts %d (crashed %d), redeems %d, finishes %d, clock moves %d, sweeps %d, history prunes %d (%d claims, %d blobs), backstop pages %d; %d claims live",
		ops, stats[0].Load(), stats[6].Load(), stats[1].Load(), stats[2].Load(), stats[3].Load(), stats[4].Load(),
		stats[7].Load(), pruned[0].Load(), pruned[1].Load(), stats[5].Load(), len(pool))

	// Every live claim still redeems; then every claim ends.
	for _, l := range pool {
		p, err := s.Redeem(ctx, l.ref)
		if ended(err, l.ref) {
			continue
		}
		if err != nil {
			t.Fatalf("final redeem %s: %v", l.ref.ID, err)
		}
		if got, err := p.Bytes(); err != nil || !bytes.Equal(got, payloads[l.idx]) {
			t.Fatalf("final redeem %s: %d bytes, %v", l.ref.ID, len(got), err)
		}
		if err := s.Delete(ctx, l.ref); err != nil && !errors.Is(err, claimcheck.ErrGone) {
			t.Fatal(err)
		}
	}
	// Uploads abandoned by crashes are due after confirm_within; finish them.
	fc.Advance(confirm)
	if _, err := s.SweepOnce(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// Grace (and the retry delay of collections that crashed) plus one sweep.
	fc.Advance(grace + sweepConfigForStress().RetryDelay)
	if _, err := s.SweepOnce(ctx, 0); err != nil {
		t.Fatal(err)
	}
	var left []string
	after := ""
	for {
		page, err := m.Blobs(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, b := range page {
			if b.State != meta.BlobDeleted {
				left = append(left, fmt.Sprintf("%s (%s)", b.ID, b.State))
			}
		}
		after = page[len(page)-1].ID
	}
	if len(left) > 0 {
		t.Errorf("%d blobs survived grace plus one sweep with no claim: %v", len(left), left[:min(len(left), 10)])
	}
	var files []string
	if err := filepath.WalkDir(filepath.Join(dir, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !blob.IsOwnerMarker(d.Name()) {
			files = append(files, p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(files) > 0 {
		t.Errorf("%d objects left in the bucket: %v", len(files), files[:min(len(files), 10)])
	}
}

func sweepConfigForStress() sweep.Config {
	return sweep.Config{Disabled: true, RetryDelay: 30 * time.Second, PageSize: 100}
}
