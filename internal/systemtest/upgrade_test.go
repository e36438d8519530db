package systemtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/history"
	"github.com/claimcheck/claimcheck/internal/testkit/release"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// TestRollingUpgradeFromPreviousRelease rolls a fleet of two replicas on
// PostgreSQL and MinIO from the previous release (PREVIOUS_RELEASE,
// built from this repository's history) to this tree's binary, one
// replica at a time, under put, redeem and release load through a front
// that sends each connection to a replica that accepts it. The first new
// replica migrates the schema while the old one serves on (ADR 0291:
// every migration since the previous release only adds), and the old one
// must keep answering every call on the migrated schema. Nothing fails
// beyond what a client's retry of a connection to a stopping replica
// absorbs, and the lifecycle history checker finds no acknowledged put
// lost.
//
// Short mode keeps each phase of load to a second or so;
// CLAIMCHECK_TEST_UPGRADE_LOAD (a duration) sets it for a long run.
func TestRollingUpgradeFromPreviousRelease(t *testing.T) {
	t.Parallel()
	dsn, _ := testsvc.Postgres(t)
	storage, _, _ := testsvc.S3(t)
	prev := previousReleaseBinary(t)
	bin := buildBinary(t)
	phase := 3 * time.Second
	if testing.Short() {
		phase = time.Second
	}
	if d, err := time.ParseDuration(os.Getenv("CLAIMCHECK_TEST_UPGRADE_LOAD")); err == nil && d > 0 {
		phase = d
	}
	cfg := writeConfig(t, dsn, storage, `{max_age: 10m}`)
	replicas := []*replica{startReplica(t, prev, cfg)} // the previous release's schema
	replicas = append(replicas, startReplica(t, prev, cfg))
	front := newFront(t, replicas[0].url, replicas[1].url)
	hist := recordHistory(t, "rolling-upgrade")
	load := startUpgradeLoad(t, hist.rec, front.url(), faultSeed(t))

	for i := range replicas {
		time.Sleep(phase)
		old := replicas[i]
		_ = old.cmd.Process.Signal(syscall.SIGTERM)
		<-old.done
		if err := old.cmd.Wait(); err != nil {
			t.Fatalf("replica %d of the previous release: %v\n%s", i, err, old.log())
		}
		replicas[i] = startReplica(t, bin, cfg) // the first one migrates
		front.set(i, replicas[i].url)
		if i == 0 {
			// The old replica on the migrated schema answers every kind of
			// call, directly (the front might send the load elsewhere).
			time.Sleep(phase)
			exerciseReplica(t, hist.rec.With(replicas[1].client), "the previous release on the migrated schema")
		}
	}
	time.Sleep(phase)
	claims, failed := load.stop()
	if failed > 0 {
		t.Errorf("%d calls failed after their retries", failed)
	}
	// Every claim put along the way, by either version, redeems its
	// bytes from the new fleet.
	rec := hist.rec.With(replicas[0].client)
	for _, c := range claims {
		got, err := rec.Redeem(context.Background(), c.ref)
		if err != nil || !bytes.Equal(got, c.data) {
			t.Errorf("claim %s put during the upgrade: %d bytes back, %v", c.ref.ID, len(got), err)
		}
	}
	hist.inventory(t, bin, cfg, 0) // max_age is 10m: nothing finishes but what was released
	hist.check(t)
	t.Logf("rolling upgrade from %s: %d claims put during it, all redeemed", previousCommit(t), len(claims))
}

// exerciseReplica puts, redeems, releases and deletes through one
// replica, failing the test on any error.
func exerciseReplica(t *testing.T, rec *history.Recorder, who string) {
	t.Helper()
	ctx := context.Background()
	for i := range 5 {
		data := bytes.Repeat([]byte(fmt.Sprintf("payload %d of %s ", i, who)), 100+i*500)
		ref, err := rec.Put(ctx, "load", data, claimcheck.PutOptions{Consumers: 1})
		if err != nil {
			t.Fatalf("%s: put: %v", who, err)
		}
		if got, err := rec.Redeem(ctx, ref); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: redeem %s: %d bytes, %v", who, ref.ID, len(got), err)
		}
		if i%2 == 0 {
			err = rec.Release(ctx, ref, "")
		} else {
			err = rec.Delete(ctx, ref)
		}
		if err != nil {
			t.Fatalf("%s: end %s: %v", who, ref.ID, err)
		}
	}
}

// upgradeLoad is four writers of put, redeem and release through one URL.
type upgradeLoad struct {
	stopped chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	claims  []putClaim
	failed  int
}

type putClaim struct {
	ref  claimcheck.Ref
	data []byte
}

func startUpgradeLoad(t *testing.T, rec *history.Recorder, url string, seed uint64) *upgradeLoad {
	t.Helper()
	l := &upgradeLoad{stopped: make(chan struct{})}
	shared := photosJSON(24 << 10) // deduplicated across both versions
	for w := range 4 {
		c, err := client.New(url)
		if err != nil {
			t.Fatal(err)
		}
		r := rec.With(c)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), seed))
			for {
				select {
				case <-l.stopped:
					return
				default:
				}
				l.step(t, r, rnd, shared)
			}
		}()
	}
	return l
}

// step makes one call: a put most often, else a redeem of a claim put
// before, with up to three tries for a connection a stopping replica
// closed.
func (l *upgradeLoad) step(t *testing.T, r *history.Recorder, rnd *rand.Rand, shared []byte) {
	ctx := context.Background()
	l.mu.Lock()
	var c putClaim
	if n := len(l.claims); n > 0 && rnd.IntN(3) == 0 {
		c = l.claims[rnd.IntN(n)]
	}
	l.mu.Unlock()
	err := retried(func() error {
		if c.data != nil {
			got, err := r.Redeem(ctx, c.ref)
			if err == nil && !bytes.Equal(got, c.data) {
				t.Errorf("redeem %s: %d bytes, not the %d put", c.ref.ID, len(got), len(c.data))
			}
			return err
		}
		data := shared
		if rnd.IntN(2) == 0 {
			data = make([]byte, 1+rnd.IntN(64<<10))
			for i := range data {
				data[i] = byte(rnd.Uint32())
			}
		}
		ref, err := r.Put(ctx, "load", data, claimcheck.PutOptions{})
		if err == nil {
			l.mu.Lock()
			l.claims = append(l.claims, putClaim{ref: ref, data: data})
			l.mu.Unlock()
		}
		return err
	})
	if err != nil {
		l.mu.Lock()
		l.failed++
		l.mu.Unlock()
		t.Logf("after retries: %v", err)
	}
}

// retried runs f up to three times while it fails on the connection or
// answers 503 (a replica going away under it); any other answer of the
// server is final.
func retried(f func() error) error {
	var err error
	for range 3 {
		err = f()
		var answer *client.Error
		if err == nil || errors.As(err, &answer) && answer.Status != 503 {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// stop ends the load and answers the claims it put and the calls that
// failed after their retries.
func (l *upgradeLoad) stop() ([]putClaim, int) {
	close(l.stopped)
	l.wg.Wait()
	return l.claims, l.failed
}

// previousReleaseBinary builds the previous release's claimcheck from
// this repository's history, once per commit: the binary is kept in the
// user's cache directory. It skips the test where the clone does not
// hold the commit (a shallow clone).
func previousReleaseBinary(t *testing.T) string {
	t.Helper()
	commit := previousCommit(t)
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "claimcheck", "release-"+commit)
	bin := filepath.Join(dir, "claimcheck")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Skipf("this clone does not hold the previous release %s (a shallow clone?): %v", commit, err)
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `cd "$(git rev-parse --show-toplevel)" && git archive "$1" | tar -x -C "$2"`, "sh", commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", bin+".tmp", "./cmd/claimcheck")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the previous release %s: %v\n%s", commit, err, out)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil { // whole or not at all
		t.Fatal(err)
	}
	return bin
}

// previousCommit is the previous release's commit (PREVIOUS_RELEASE).
func previousCommit(t *testing.T) string {
	t.Helper()
	commit, _ := release.Previous(t)
	return commit
}
