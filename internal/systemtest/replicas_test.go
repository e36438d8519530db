package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/history"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// replica is one `claimcheck serve` process.
type replica struct {
	url    string
	cmd    *exec.Cmd
	client *client.Client
	mu     sync.Mutex
	logs   bytes.Buffer
	done   chan struct{}
}

// startReplica runs `claimcheck serve --config cfg` on a free loopback
// port. Cleanup interrupts it (unless the test killed it) and waits.
func startReplica(t *testing.T, bin, cfg string) *replica {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--config", cfg)
	cmd.Env = append(os.Environ(), "CLAIMCHECK_SERVER=")
	r := launchReplica(t, cmd, "replica", servingLine, time.Minute)
	var err error
	r.client, err = client.New(r.url)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// launchReplica starts cmd, a `claimcheck serve`, in a temporary
// directory and waits up to wait for the URL its log reports (the first
// submatch of serving). Cleanup logs the server's errors and warnings if
// the test failed, interrupts it (unless the test killed it), and kills
// it if it has not ended 30 s later. name names it in messages.
func launchReplica(t *testing.T, cmd *exec.Cmd, name string, serving *regexp.Regexp, wait time.Duration) *replica {
	t.Helper()
	cmd.Dir = t.TempDir()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			r.mu.Lock()
			r.logs.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			logProblems(t, name, r.log())
		}
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-r.done
		}
		_ = cmd.Wait()
	})
	select {
	case r.url = <-urls:
	case <-r.done:
		t.Fatalf("%s exited before serving:\n%s", name, r.log())
	case <-time.After(wait):
		t.Fatalf("%s did not report its address:\n%s", name, r.log())
	}
	return r
}

func (r *replica) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// metric sums the samples of a counter on the replica's /metrics.
func (r *replica) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", r.url, err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// writeConfig writes a serve config on PostgreSQL and S3 with the given
// namespace TTLs; the servers use the wall clock, so short TTLs stand in
// for a moving clock.
func writeConfig(t *testing.T, dsn, storage, ttl string, settings ...string) string {
	t.Helper()
	var more strings.Builder
	for _, s := range settings {
		more.WriteString("    " + s + "\n")
	}
	cfg := fmt.Sprintf(`metadata: %q
storage: %q
defaults: false
namespaces:
  load:
    threshold: 1
    ttl: %s
%ssweeper:
  interval: 100ms
  idle_grace: 50ms
  max_lag: 200ms
`, dsn, storage, ttl, more.String())
	path := filepath.Join(t.TempDir(), "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServePostgresS3 goes client → server → PostgreSQL + MinIO: a put
// and a redeem of a megabyte, the lifecycle rules the server made at
// start, and a release that ends the claim.
func TestServePostgresS3(t *testing.T) {
	t.Parallel()
	dsn, _ := testsvc.Postgres(t)
	storage, s3c, bucket := testsvc.S3(t)
	bin := buildBinary(t)
	r := startReplica(t, bin, writeConfig(t, dsn, storage, `{max_age: 1h, retention_after_read: 1s, grace_period: 1s}`))
	ctx := context.Background()

	data := photosJSON(1 << 20)
	ref, err := r.client.Put(ctx, "load", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.client.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Bytes()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem: %d bytes, %v", len(got), err)
	}
	if n := testsvc.CountObjects(t, s3c, bucket); n != 1 {
		t.Errorf("bucket holds %d objects, want 1", n)
	}
	lc, err := s3c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("the server made no lifecycle rules: %v", err)
	}
	found := false
	for _, rule := range lc.Rules {
		id := aws.ToString(rule.ID)
		if strings.HasPrefix(id, "claimcheck:") && strings.HasSuffix(id, ":ns:load") && rule.Expiration != nil && aws.ToInt32(rule.Expiration.Days) == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("no 1-day rule claimcheck:<store id>:ns:load among %d rules", len(lc.Rules))
	}
	if err := r.client.Release(ctx, ref, ""); err != nil {
		t.Fatal(err)
	}
}

// TestReplicasConcurrent runs three servers on one PostgreSQL and one
// MinIO under concurrent put/redeem/release load, kills one with SIGKILL
// mid-run, and then checks the whole store (fsck clean, and directly): no
// live claim lost, namespace
// counters equal to the sums over claims, every claim finished once its
// deadline passed and its object reclaimed after grace, and no claim
// finished twice (every replica's finish counter, the killed one's as of
// its last scrape, never adds up to more than the finished rows).
//
// The load runs 4 s in short mode, 12 s otherwise, and as long as
// CLAIMCHECK_TEST_REPLICAS_LOAD says (a duration) in a long run; the
// writers' choices follow CLAIMCHECK_TEST_FAULT_SEED.
func TestReplicasConcurrent(t *testing.T) {
	t.Parallel()
	dsn, db := testsvc.Postgres(t)
	storage, s3c, bucket := testsvc.S3(t)
	bin := buildBinary(t)
	const maxAge, grace = 3 * time.Second, time.Second
	// Payloads up to 32 KiB of the 1 B to 64 KiB the writers put are
	// inline (ADR 0292): the checks below hold for both forms at once.
	cfg := writeConfig(t, dsn, storage, `{max_age: 3s, retention_after_read: 500ms, grace_period: 1s}`, "inline_below: 32KiB")
	// Start one first so that the schema migrations run once, then the others.
	replicas := []*replica{startReplica(t, bin, cfg)}
	replicas = append(replicas, startReplica(t, bin, cfg), startReplica(t, bin, cfg))
	// Every call is recorded; the lifecycle history checker judges the
	// run at the end (ADR 0287).
	hist := recordHistory(t, "replicas-kill9")
	recs := []*history.Recorder{hist.rec.With(replicas[0].client), hist.rec.With(replicas[1].client), hist.rec.With(replicas[2].client)}

	load := 12 * time.Second
	if testing.Short() {
		load = 4 * time.Second
	}
	if d, err := time.ParseDuration(os.Getenv("CLAIMCHECK_TEST_REPLICAS_LOAD")); err == nil && d > 0 {
		load = d
	}
	seed := faultSeed(t)
	type rec struct {
		ref      claimcheck.Ref
		data     []byte
		released bool
	}
	var (
		mu      sync.Mutex
		claims  []*rec
		killed  = make(chan struct{})
		warm    = make(chan struct{}) // closed at the 30th put: time to kill
		warmed  sync.Once
		ops     [3]int
		killErr int
	)
	shared := [][]byte{photosJSON(20 << 10), photosJSON(40 << 10), bytes.Repeat([]byte("z"), 30<<10)}
	deadline := time.Now().Add(load)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), seed))
			ctx := context.Background()
			for time.Now().Before(deadline) {
				i := rnd.IntN(len(replicas))
				isKilled := false
				select {
				case <-killed:
					isKilled = i == 0
				default:
				}
				if isKilled {
					continue
				}
				c := recs[i]
				// An error from the replica being killed is expected.
				fail := func(format string, args ...any) {
					if i == 0 {
						select {
						case <-killed:
							mu.Lock()
							killErr++
							mu.Unlock()
							return
						default:
						}
					}
					t.Errorf("replica %d: "+format, append([]any{i}, args...)...)
				}
				switch op := rnd.IntN(10); {
				case op < 5:
					var data []byte
					if rnd.IntN(3) == 0 {
						data = shared[rnd.IntN(len(shared))]
					} else {
						data = make([]byte, 1+rnd.IntN(64<<10))
						for j := range data {
							data[j] = byte(rnd.Uint32())
						}
					}
					ref, err := c.Put(ctx, "load", data, claimcheck.PutOptions{})
					if err != nil {
						fail("put: %v", err)
						continue
					}
					mu.Lock()
					claims = append(claims, &rec{ref: ref, data: data})
					ops[0]++
					if ops[0] == 30 {
						warmed.Do(func() { close(warm) })
					}
					mu.Unlock()
				default:
					mu.Lock()
					if len(claims) == 0 {
						mu.Unlock()
						continue
					}
					cl := claims[rnd.IntN(len(claims))]
					live := !cl.released && time.Now().Add(300*time.Millisecond).Before(cl.ref.ExpiresAt)
					release := op >= 8 && live
					if release {
						cl.released = true
					}
					mu.Unlock()
					if !live {
						continue
					}
					if release {
						if err := c.Release(ctx, cl.ref, ""); err != nil {
							fail("release %s: %v", cl.ref.ID, err)
						}
						mu.Lock()
						ops[2]++
						mu.Unlock()
						continue
					}
					got, err := c.Redeem(ctx, cl.ref)
					if err != nil {
						fail("redeem live claim %s (expires %s): %v", cl.ref.ID, cl.ref.ExpiresAt, err)
						continue
					}
					if !bytes.Equal(got, cl.data) {
						fail("redeem %s: %d bytes, %v", cl.ref.ID, len(got), err)
					}
					mu.Lock()
					ops[1]++
					mu.Unlock()
				}
			}
		}()
	}

	// Kill replica 0 once the load is under way, after a last scrape of
	// its counters.
	select {
	case <-warm:
	case <-time.After(load / 2): // a slow machine: kill halfway anyway
	}
	// goneFinished sums the finish counters of replicas no longer running.
	goneFinished := replicas[0].metric(t, "claimcheck_claims_deleted_total")
	close(killed)
	if err := replicas[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	mu.Lock()
	t.Logf("%d puts, %d redeems, %d releases; %d errors from the killed replica", ops[0], ops[1], ops[2], killErr)
	mu.Unlock()
	if t.Failed() {
		return
	}
	survivors := replicas[1:]
	if _, err := recs[1].Usage(context.Background(), "load"); err != nil {
		t.Errorf("usage of load: %v", err)
	}
	// The store itself at the end: every object owned, none of a finished
	// claim kept long past its grace (1s) and the sweeper's lag.
	hist.inventory(t, bin, cfg, 30*time.Second)
	hist.check(t)

	// Counters equal the sums over claims, in one snapshot.
	checkCounters(t, db)
	var inline, objects int
	if err := db.QueryRow(`SELECT COUNT(*) FILTER (WHERE object_key LIKE 'load/inline/%'), COUNT(*) FILTER (WHERE object_key NOT LIKE 'load/inline/%')
		FROM blobs`).Scan(&inline, &objects); err != nil || inline == 0 || objects == 0 {
		t.Errorf("blobs: %d inline, %d in the bucket (%v); want the load to have made both", inline, objects, err)
	}

	// Every live claim is still there, through a survivor.
	ctx := context.Background()
	for _, cl := range claims {
		if cl.released || !time.Now().Add(300*time.Millisecond).Before(cl.ref.ExpiresAt) {
			continue
		}
		p, err := survivors[0].client.Redeem(ctx, cl.ref)
		if err != nil {
			t.Fatalf("live claim %s lost: %v", cl.ref.ID, err)
		}
		if got, err := p.Bytes(); err != nil || !bytes.Equal(got, cl.data) {
			t.Fatalf("live claim %s: %d bytes, %v", cl.ref.ID, len(got), err)
		}
	}

	// fsck on the store as the load left it: stop the survivors (after
	// a last scrape of their counters; fsck reads rows and objects at
	// different moments, so running sweepers would race it), check, and
	// start two fresh replicas to do the rest of the due work.
	for _, r := range survivors {
		goneFinished += r.metric(t, "claimcheck_claims_deleted_total")
		if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		<-r.done
		if err := r.cmd.Wait(); err != nil {
			t.Fatalf("replica stopped with %v\n%s", err, r.log())
		}
	}
	fsck(t, bin, cfg)
	survivors = []*replica{startReplica(t, bin, cfg), startReplica(t, bin, cfg)}

	// Wait for the survivors' sweepers to finish everything: every
	// deadline has passed by then, and every grace period after it.
	end := time.Now().Add(maxAge + grace + 60*time.Second)
	var left string
	for {
		left = remaining(t, db, s3c, bucket)
		if left == "" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("due work not done a minute after the last deadline: %s\n%s", left, survivors[0].log())
		}
		time.Sleep(200 * time.Millisecond) // the servers run on the wall clock
	}
	checkCounters(t, db)
	fsck(t, bin, cfg)

	var finished, created int
	if err := db.QueryRow(`SELECT COUNT(*) FILTER (WHERE state = 'deleted'), COUNT(*) FROM claims`).Scan(&finished, &created); err != nil {
		t.Fatal(err)
	}
	counted := goneFinished
	for _, r := range survivors {
		counted += r.metric(t, "claimcheck_claims_deleted_total")
	}
	t.Logf("%d claims created, %d finished; finish counters: %.0f", created, finished, counted)
	if finished != created {
		t.Errorf("%d of %d claims finished", finished, created)
	}
	if int(counted) > finished {
		t.Errorf("claims finished %0.f times by the replicas' counters, but only %d rows finished: some due work was done twice", counted, finished)
	}
}

// remaining describes the due work not done yet ("" when none): claims
// not finished, blobs not deleted, objects left in the bucket or inline.
func remaining(t *testing.T, db *sql.DB, s3c *s3.Client, bucket string) string {
	t.Helper()
	var claims, blobs, inline int
	err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM claims WHERE state <> 'deleted'), (SELECT COUNT(*) FROM blobs WHERE state <> 'deleted'),
		(SELECT COUNT(*) FROM inline_objects)`).Scan(&claims, &blobs, &inline)
	if err != nil {
		t.Fatal(err)
	}
	objects := testsvc.CountObjects(t, s3c, bucket)
	if claims == 0 && blobs == 0 && objects == 0 && inline == 0 {
		return ""
	}
	return fmt.Sprintf("%d claims, %d blobs, %d objects, %d inline objects", claims, blobs, objects, inline)
}

// checkCounters compares every namespace row with the sums over its
// claims, in one statement (one snapshot) while the sweepers may run.
func checkCounters(t *testing.T, db *sql.DB) {
	t.Helper()
	rows, err := db.Query(`SELECT n.name, n.used_bytes, n.reserved_bytes, n.active_claims, n.pending_claims,
	    COALESCE((SELECT SUM(size) FROM claims c WHERE c.namespace = n.name AND c.state = 'active'), 0),
	    COALESCE((SELECT SUM(reserved_bytes) FROM claims c WHERE c.namespace = n.name AND c.state = 'pending'), 0),
	    (SELECT COUNT(*) FROM claims c WHERE c.namespace = n.name AND c.state = 'active'),
	    (SELECT COUNT(*) FROM claims c WHERE c.namespace = n.name AND c.state = 'pending')
	  FROM namespaces n`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var row, sums [4]int64
		if err := rows.Scan(&name, &row[0], &row[1], &row[2], &row[3], &sums[0], &sums[1], &sums[2], &sums[3]); err != nil {
			t.Fatal(err)
		}
		if row != sums {
			t.Errorf("namespace %s: counters (used, reserved, active, pending) = %v, sums over claims = %v", name, row, sums)
		}
	}
	if err := rows.Err(); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
}

// fsck runs `claimcheck fsck` on the replicas' store and fails the test
// on any finding.
func fsck(t *testing.T, bin, cfg string) {
	t.Helper()
	out, stderr, code := run(t, bin, nil, "fsck", "--config", cfg)
	if code != 0 {
		t.Fatalf("fsck: exit %d\n%s%s", code, out, stderr)
	}
}
