//go:build linux

package systemtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/history"
	"github.com/claimcheck/claimcheck/internal/testkit/netns"
)

// distStorageTimeout is the servers' storage_timeout in the fault tests:
// short, so that a put on a storage without write quorum is refused
// soon after it stalls.
const distStorageTimeout = 3 * time.Second

// TestDistributedMinio runs claimcheck on SQLite and a MinIO of four
// nodes with two drives each (one erasure set of 8 drives, 4 of them
// parity: writes need 5 drives, reads 4), every node in a network
// namespace of its own and claimcheck in the bridge's. Four writers put
// 256 KiB payloads and redeem each one through the history recorder
// while the test kills nodes with SIGKILL and wipes a drive:
//
//   - one node killed, then restarted: puts go on (6 drives of 8);
//   - two nodes killed: a put stalls inside MinIO and must be answered
//     503 within storage_timeout (ADR 0289), never hang; redeems of
//     what was acknowledged go on (4 drives are a read quorum);
//   - one drive wiped, its node restarted: MinIO heals the drive.
//
// At the end every acknowledged put redeems its bytes, the history
// checker passes and `claimcheck fsck` is clean. The short schedule is
// fixed; CLAIMCHECK_TEST_FAULT_DURATION runs a random one from
// CLAIMCHECK_TEST_FAULT_SEED.
func TestDistributedMinio(t *testing.T) {
	plan := newFaultPlan(t)
	network := netns.New(t)
	dir := t.TempDir()
	cluster := startMinio(t, network, 4, 2, filepath.Join(dir, "minio"))
	bin := buildBinary(t)
	cfg := filepath.Join(dir, "claimcheck.yaml")
	yaml := fmt.Sprintf(`metadata: %q
storage: %q
storage_timeout: %s
lifecycle: off
defaults: false
namespaces:
  load: { threshold: 1, ttl: { max_age: 24h } }
sweeper: { interval: 1s }
`, "sqlite:"+filepath.Join(dir, "meta.db"), cluster.storageURL(), distStorageTimeout)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := serveIn(t, network, network.Bridge, bin, cfg, faultEnv())
	hist := recordHistory(t, "distributed-minio")
	recs := make([]*history.Recorder, 4)
	for i := range recs {
		recs[i] = hist.rec.With(srv.client)
	}
	load := startLoad("load", recs, false)
	f := &minioFaults{t: t, c: cluster, net: network, load: load, plan: plan, rec: hist.rec.With(srv.client)}
	time.Sleep(3 * time.Second) // healthy load before the first fault
	if plan.long {
		f.randomSchedule()
	} else {
		f.killOne(1, 6*time.Second)
		f.killTwo(1, 2, 8*time.Second)
		f.wipeDrive(3, 0)
	}
	load.enter("after the faults")
	time.Sleep(3 * time.Second)
	load.finish(t)
	f.fsckClean(bin, cfg)
	n := load.verifyAcked(t, hist.rec.With(srv.client))
	t.Logf("%d acknowledged puts redeemed their bytes", n)
	hist.check(t)
}

// fsckClean runs fsck after the faults. A storage that answered 404
// for objects it still had while degraded (MinIO with a node restarting
// on a wiped drive) made redeems mark their blobs damaged (missing, ADR
// 0255); the operator's step then is `fsck --verify`, which reads every
// object and clears the marks of those that read back good. The test
// requires that every mark made during the faults is cleared so (the
// storage lost nothing) and that fsck is clean afterwards.
func (f *minioFaults) fsckClean(bin, cfg string) {
	t := f.t
	marked := f.load.markedMissing()
	out, code := runIn(t, f.net.Bridge, faultEnv(), bin, "fsck", "--config", cfg)
	if code == 0 {
		return
	}
	f.missingButServed(out)
	out, code = runIn(t, f.net.Bridge, faultEnv(), bin, "fsck", "--verify", "--rate", "1073741824", "--config", cfg)
	t.Logf("fsck --verify: exit %d\n%s", code, lastLines(out, 8))
	m := goodAgain.FindStringSubmatch(out)
	if m == nil {
		m = []string{"", "0"}
	}
	t.Logf("fsck after the faults: %d redeems answered a blob missing; fsck --verify found %s blobs good again", marked, m[1])
	if !strings.Contains(out, "corrupt: 0;") || m[1] == "0" {
		t.Errorf("fsck after the faults found problems that fsck --verify did not clear as objects reading back good:\n%s", lastLines(out, 30))
	}
	if out, code := runIn(t, f.net.Bridge, faultEnv(), bin, "fsck", "--config", cfg); code != 0 {
		t.Errorf("fsck after fsck --verify: exit %d\n%s", code, lastLines(out, 30))
	}
}

var goodAgain = regexp.MustCompile(`found good again: (\d+)`)

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

var missingBlob = regexp.MustCompile(`blob (b_[A-Za-z0-9_-]+) \(committed, namespace ([a-z0-9-]+)\).*missing`)

// missingButServed reads, straight from MinIO, the objects fsck reports
// missing, and logs how many MinIO serves whole now: those were marked
// damaged on a 404 the storage answered while degraded, not lost.
func (f *minioFaults) missingButServed(fsckOut string) {
	s3c := f.c.client(f.net.Bridge)
	found, n := 0, 0
	for _, m := range missingBlob.FindAllStringSubmatch(fsckOut, -1) {
		n++
		sum := sha256.Sum256([]byte(m[1]))
		key := m[2] + "/" + hex.EncodeToString(sum[:1]) + "/" + m[1]
		out, err := s3c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(faultBucket), Key: aws.String(key)})
		if err != nil {
			continue
		}
		b, err := io.ReadAll(out.Body)
		_ = out.Body.Close()
		if err == nil && len(b) > 0 {
			found++
		}
	}
	f.t.Logf("of %d objects fsck reports missing, MinIO serves %d whole now", n, found)
}

// minioFaults are the faults TestDistributedMinio injects. Node 0 is the
// one claimcheck talks to (behind a load balancer it would be any live
// node); the faults take the others.
type minioFaults struct {
	t    *testing.T
	c    *minioCluster
	net  *netns.Network
	load *faultLoad
	plan faultPlan
	rec  *history.Recorder
}

// killOne kills node i, keeps it down for down, restarts it and waits
// for the cluster.
func (f *minioFaults) killOne(i int, down time.Duration) {
	f.load.enter(fmt.Sprintf("node %d killed", i+1))
	f.c.kill(i)
	time.Sleep(down)
	f.c.start(i)
	f.load.enter(fmt.Sprintf("node %d restarting", i+1))
	took := f.c.waitHealthy(f.net.Bridge, 2*time.Minute)
	f.t.Logf("node %d back: cluster healthy %s after its restart", i+1, took.Round(100*time.Millisecond))
}

// killTwo kills nodes i and j (the write quorum lost), reads back what
// was acknowledged while they are down, and restarts them.
func (f *minioFaults) killTwo(i, j int, down time.Duration) {
	f.load.enter(fmt.Sprintf("nodes %d and %d killed", i+1, j+1))
	f.c.kill(i)
	f.c.kill(j)
	reads := &phaseStats{name: "  redeems of earlier puts"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.readBack(reads, stop)
	}()
	time.Sleep(down)
	close(stop)
	wg.Wait()
	f.t.Log(reads)
	if reads.redeemOK.Load() == 0 {
		f.t.Errorf("no acknowledged put redeemed with two nodes of four down (4 of 8 drives are a read quorum): %v", reads.failures)
	}
	f.c.start(i)
	f.c.start(j)
	f.load.enter(fmt.Sprintf("nodes %d and %d restarting", i+1, j+1))
	took := f.c.waitHealthy(f.net.Bridge, 2*time.Minute)
	f.t.Logf("nodes %d and %d back: cluster healthy %s after their restart", i+1, j+1, took.Round(100*time.Millisecond))
}

// readBack redeems acknowledged puts one after another until stop.
func (f *minioFaults) readBack(st *phaseStats, stop chan struct{}) {
	f.load.mu.Lock()
	refs := make([]claimcheck.Ref, 0, len(f.load.acked))
	keys := make([]putKey, 0, len(f.load.acked))
	for r, k := range f.load.acked {
		refs, keys = append(refs, r), append(keys, k)
	}
	f.load.mu.Unlock()
	for i := 0; len(refs) > 0; i++ {
		select {
		case <-stop:
			return
		default:
		}
		k := i % len(refs)
		got, err := f.rec.Redeem(context.Background(), refs[k])
		st.redeemed(refs[k], got, payloadOf(keys[k].w, keys[k].seq), err)
	}
}

// wipeDrive kills node i, empties its drive d (a replaced disk),
// restarts it and waits for MinIO to heal the drive: as many objects of
// the bucket on it as on the node's other drive.
func (f *minioFaults) wipeDrive(i, d int) {
	f.load.enter(fmt.Sprintf("node %d drive %d wiped", i+1, d+1))
	f.c.kill(i)
	p := f.c.drive(i, d)
	if err := os.RemoveAll(p); err != nil {
		f.t.Fatal(err)
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		f.t.Fatal(err)
	}
	f.c.start(i)
	f.c.waitHealthy(f.net.Bridge, 2*time.Minute)
	began := time.Now()
	other := f.c.drive(i, 1-d)
	for {
		healed, want := objectsOn(p), objectsOn(other)
		if healed >= want {
			f.t.Logf("node %d drive %d healed: %d objects in %s", i+1, d+1, healed, time.Since(began).Round(100*time.Millisecond))
			return
		}
		if time.Since(began) > 3*time.Minute {
			f.t.Logf("node %d drive %d not healed after %s: %d of %d objects (the reads use the other drives)", i+1, d+1, time.Since(began).Round(time.Second), healed, want)
			return
		}
		time.Sleep(time.Second) // polling MinIO's background heal
	}
}

// objectsOn counts the bucket's objects on a drive (one xl.meta each).
func objectsOn(drive string) int {
	n := 0
	_ = filepath.WalkDir(filepath.Join(drive, faultBucket), func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && e.Name() == "xl.meta" {
			n++
		}
		return nil
	})
	return n
}

// inSync pauses the writers and waits up to bound until every drive
// holds as many objects of the bucket as the fullest one: MinIO has
// healed what the last fault left short.
func (f *minioFaults) inSync(bound time.Duration) bool {
	f.load.paused.Store(true)
	defer f.load.paused.Store(false)
	began := time.Now()
	for {
		lo, hi := -1, 0
		for i := range f.c.nodes {
			for d := range 2 {
				n := objectsOn(f.c.drive(i, d))
				if lo < 0 || n < lo {
					lo = n
				}
				hi = max(hi, n)
			}
		}
		if lo == hi {
			return true
		}
		if time.Since(began) > bound {
			f.t.Logf("drives not in sync after %s: %d to %d objects", bound, lo, hi)
			return false
		}
		time.Sleep(time.Second) // polling MinIO's healing
	}
}

// randomSchedule injects faults drawn from the plan's seed until its
// duration has passed. Each fault starts from drives in sync: the
// schedule tests claimcheck within what the erasure code tolerates, not
// a storage that has lost more shards than its parity.
func (f *minioFaults) randomSchedule() {
	end := time.Now().Add(f.plan.duration)
	for time.Now().Before(end) {
		if !f.inSync(time.Minute) {
			continue
		}
		i := 1 + f.plan.rng.IntN(3)
		switch f.plan.rng.IntN(3) {
		case 0:
			f.killOne(i, f.plan.pause(time.Second, 20*time.Second))
		case 1:
			j := 1 + (i % 3)
			f.killTwo(i, j, f.plan.pause(2*distStorageTimeout, 30*time.Second))
		default:
			f.wipeDrive(i, f.plan.rng.IntN(2))
		}
		f.load.enter("between faults")
		time.Sleep(f.plan.pause(time.Second, 10*time.Second))
	}
}
