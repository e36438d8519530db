//go:build linux

package systemtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/history"
	"github.com/claimcheck/claimcheck/internal/testkit/netns"
)

// The tests of this file's kind (distributed storage, partitions) run
// servers in network namespaces of their own (internal/testkit/netns):
// every address is a 10.x address that exists only inside them.

const (
	minioUser   = "claimcheck"
	minioSecret = "claimcheck-secret-key"
	faultBucket = "claimcheck-faults"
)

// faultPlan is how long a fault test runs and its random schedule's
// seed: short by default (a fixed schedule for CI), long with
// CLAIMCHECK_TEST_FAULT_DURATION (a random schedule from faultSeed).
type faultPlan struct {
	long     bool
	duration time.Duration
	seed     uint64
	rng      *rand.Rand
}

func newFaultPlan(t *testing.T) faultPlan {
	t.Helper()
	p := faultPlan{seed: faultSeed(t)}
	if s := os.Getenv("CLAIMCHECK_TEST_FAULT_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("CLAIMCHECK_TEST_FAULT_DURATION=%q: want a positive duration (10m)", s)
		}
		p.long, p.duration = true, d
	}
	p.rng = rand.New(rand.NewPCG(p.seed, p.seed^0x9e3779b97f4a7c15))
	if p.long {
		t.Logf("long fault run: %s, CLAIMCHECK_TEST_FAULT_SEED=%d", p.duration, p.seed)
	} else {
		t.Logf("short fault run (fixed schedule); a long one: CLAIMCHECK_TEST_FAULT_DURATION=10m CLAIMCHECK_TEST_FAULT_SEED=%d", p.seed)
	}
	return p
}

// pause is a random wait in [lo, hi).
func (p faultPlan) pause(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(p.rng.Int64N(int64(hi-lo)))
}

// minioBinary is the MinIO that scripts/minio.sh builds into its cache
// directory (scripts/test.sh runs it before the tests), or skips.
func minioBinary(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("bash", "../../scripts/minio.sh", "path").Output()
	if err != nil {
		t.Fatalf("scripts/minio.sh path: %v", err)
	}
	bin := strings.TrimSpace(string(out))
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		t.Skipf("skipping: no MinIO at %s (scripts/minio.sh start builds it; scripts/test.sh runs that)", bin)
	}
	return bin
}

// netServer is one process run in a namespace, stopped (SIGKILL, then
// waited for) when the test ends unless it ended before.
type netServer struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startIn(t *testing.T, node *netns.Node, logPath string, env []string, name string, args ...string) *netServer {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := node.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("start %s in %s: %v", name, node.Name, err)
	}
	s := &netServer{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(s.done)
	}()
	t.Cleanup(s.kill)
	return s
}

// kill ends the process with SIGKILL (what a crash or an OOM kill
// does) and waits for it.
func (s *netServer) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// minioCluster is a distributed MinIO of one node per namespace.
type minioCluster struct {
	t       *testing.T
	bin     string
	dir     string
	nodes   []*netns.Node
	servers []*netServer
	args    []string // the server's arguments, the same on every node
}

// startMinio runs MinIO on nodes, drives per node, with its drives
// under dir, and waits until the cluster takes writes. MinIO refuses
// loopback endpoints and several of its nodes at one address, so each
// node is a namespace of its own; the drive paths differ per node
// because the namespaces share one file system.
func startMinio(t *testing.T, net *netns.Network, n, drives int, dir string) *minioCluster {
	t.Helper()
	c := &minioCluster{t: t, bin: minioBinary(t), dir: dir}
	c.args = []string{"server", "--quiet", "--address", ":9000", "--console-address", ":9001"}
	for i := range n {
		node, err := net.AddNode(fmt.Sprintf("minio%d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, node)
		for d := range drives {
			p := c.drive(i, d)
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			c.args = append(c.args, fmt.Sprintf("http://%s:9000%s", node.Addr, p))
		}
	}
	c.servers = make([]*netServer, n)
	for i := range n {
		c.start(i)
	}
	c.waitHealthy(net.Bridge, 2*time.Minute)
	c.makeBucket(net.Bridge)
	return c
}

// drive is node i's drive d.
func (c *minioCluster) drive(i, d int) string {
	return filepath.Join(c.dir, fmt.Sprintf("node%d", i+1), fmt.Sprintf("drive%d", d+1))
}

// start (re)starts node i's server.
func (c *minioCluster) start(i int) {
	env := []string{"MINIO_ROOT_USER=" + minioUser, "MINIO_ROOT_PASSWORD=" + minioSecret, "MINIO_BROWSER=off",
		"MINIO_UPDATE=off", "MINIO_CALLHOME_ENABLE=off",
		// Drives on the root file system are refused outside CI mode.
		"MINIO_CI_CD=on"}
	c.servers[i] = startIn(c.t, c.nodes[i], filepath.Join(c.dir, fmt.Sprintf("node%d.log", i+1)), env, c.bin, c.args...)
}

// kill ends node i's server with SIGKILL.
func (c *minioCluster) kill(i int) { c.servers[i].kill() }

// endpoint is the URL of node 0, the one claimcheck is given: the node
// a load balancer would send it to, never killed by these tests.
func (c *minioCluster) endpoint() string { return fmt.Sprintf("http://%s:9000", c.nodes[0].Addr) }

// storageURL is claimcheck's storage setting for the cluster.
func (c *minioCluster) storageURL() string {
	return fmt.Sprintf("s3://%s?endpoint=%s&region=us-east-1&use_path_style=true", faultBucket, c.endpoint())
}

// waitHealthy waits until MinIO's cluster health check passes (write
// quorum on every erasure set), asked from the bridge.
func (c *minioCluster) waitHealthy(from *netns.Node, bound time.Duration) time.Duration {
	c.t.Helper()
	hc := nodeHTTP(from, 2*time.Second)
	began := time.Now()
	for {
		resp, err := hc.Get(c.endpoint() + "/minio/health/cluster")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(began)
			}
		}
		if time.Since(began) > bound {
			c.t.Fatalf("MinIO not healthy after %s (last: %v)", bound, err)
		}
		time.Sleep(200 * time.Millisecond) // polling a starting cluster's health
	}
}

// makeBucket creates the bucket, retrying while a starting MinIO
// refuses.
func (c *minioCluster) makeBucket(from *netns.Node) {
	c.t.Helper()
	s3c := c.client(from)
	var err error
	for try := 0; try < 50; try++ {
		if _, err = s3c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(faultBucket)}); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond) // retrying a starting server's refusal
	}
	c.t.Fatalf("create bucket: %v", err)
}

// client is an S3 client of the cluster whose connections are made
// inside from.
func (c *minioCluster) client(from *netns.Node) *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(c.endpoint()), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(minioUser, minioSecret, ""),
		HTTPClient:  nodeHTTP(from, 10*time.Second),
	})
}

// nodeHTTP is an HTTP client whose connections are made inside node.
func nodeHTTP(node *netns.Node, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: node.DialContext}}
}

var servingAnyLine = regexp.MustCompile(`url=(http://[0-9.]+:\d+)`)

// serveIn runs `claimcheck serve` inside node, listening on the node's
// address, with a client that connects from inside the bridge.
func serveIn(t *testing.T, net *netns.Network, node *netns.Node, bin, cfg string, env []string) *replica {
	t.Helper()
	cmd := node.Command(bin, "serve", "--listen", node.Addr.String()+":0", "--config", cfg)
	cmd.Env = append(append(os.Environ(), "CLAIMCHECK_SERVER="), env...)
	r := launchReplica(t, cmd, "serve in "+node.Name, servingAnyLine, 2*time.Minute)
	var err error
	// The guard that turns a request that hangs into a failure: far
	// past every bound of the server's.
	r.client, err = client.New(r.url, client.WithHTTPClient(nodeHTTP(net.Bridge, 90*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// logProblems logs the first errors and warnings of a server's log.
func logProblems(t *testing.T, name, log string) {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
			if n++; n <= 20 {
				t.Logf("%s: %s", name, line)
			}
		}
	}
}

// faultEnv is the environment of a claimcheck process on the test's
// MinIO.
func faultEnv() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + minioUser, "AWS_SECRET_ACCESS_KEY=" + minioSecret, "AWS_REGION=us-east-1"}
}

// runIn runs a claimcheck subcommand inside node and returns its output
// and exit code.
func runIn(t *testing.T, node *netns.Node, env []string, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := node.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "CLAIMCHECK_SERVER="), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// payloadOf is the payload of writer w's put number seq: 256 KiB that
// the test makes again to compare, instead of keeping them.
func payloadOf(w, seq int) []byte {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(seq)))
	b := make([]byte, 256<<10)
	for i := 0; i < len(b); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// putKey names an acknowledged put's payload (payloadOf).
type putKey struct{ w, seq int }

// phaseStats counts what the writers saw while one fault was on.
type phaseStats struct {
	name                       string
	putOK, putRefused, putFail atomic.Int64
	redeemOK, redeemFail       atomic.Int64
	// markedMissing counts redeems answered checksum_mismatch because
	// the storage answered 404 (the blob is marked damaged, missing);
	// the test checks at the end that the storage still had them.
	markedMissing atomic.Int64
	maxPutNanos   atomic.Int64
	mu            sync.Mutex
	failures      []string
}

func (s *phaseStats) String() string {
	return fmt.Sprintf("%-28s puts: %4d acknowledged, %4d refused 503, %d other; redeems: %4d ok, %d failed (%d marked missing); slowest put answer %s",
		s.name, s.putOK.Load(), s.putRefused.Load(), s.putFail.Load(), s.redeemOK.Load(), s.redeemFail.Load(), s.markedMissing.Load(),
		time.Duration(s.maxPutNanos.Load()).Round(10*time.Millisecond))
}

func (s *phaseStats) fail(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) < 5 {
		s.failures = append(s.failures, what)
	}
}

// redeemed counts a redeem's outcome: the bytes put, unavailable, or a
// missing-object mark (checked at the end by the test); anything else
// fails the test.
func (s *phaseStats) redeemed(ref claimcheck.Ref, got, want []byte, err error) {
	if err == nil && string(got) == string(want) {
		s.redeemOK.Add(1)
		return
	}
	s.redeemFail.Add(1)
	switch {
	case err == nil:
		s.fail(fmt.Sprintf("redeem %s: %d bytes differ from the %d put", ref.ID, len(got), len(want)))
	case errors.Is(err, claimcheck.ErrChecksumMismatch) && strings.Contains(err.Error(), "missing"):
		s.markedMissing.Add(1)
	case errors.Is(err, claimcheck.ErrUnavailable):
	default:
		s.fail(fmt.Sprintf("redeem %s: %v", ref.ID, err))
	}
}

// markedMissing sums the phases' missing-object marks.
func (l *faultLoad) markedMissing() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.phases {
		n += s.markedMissing.Load()
	}
	return n
}

// faultLoad is writers putting 256 KiB payloads and redeeming each one
// they put, through recorders of the history checker, while a test
// injects faults; it keeps every acknowledged put for the end.
type faultLoad struct {
	ns string
	// churn: every other put is of one of a few recurring payloads and
	// is deleted once redeemed, so that the sweeper collects blobs while
	// puts of the same bytes share them (dedup) under the faults.
	churn  bool
	paused atomic.Bool
	phase  atomic.Pointer[phaseStats]
	phases []*phaseStats
	mu     sync.Mutex
	acked  map[claimcheck.Ref]putKey
	stop   chan struct{}
	wg     sync.WaitGroup
}

// startLoad starts one writer per recorder.
func startLoad(ns string, recs []*history.Recorder, churn bool) *faultLoad {
	l := &faultLoad{ns: ns, churn: churn, acked: map[claimcheck.Ref]putKey{}, stop: make(chan struct{})}
	l.enter("healthy")
	for w, rec := range recs {
		l.wg.Add(1)
		go l.write(w, rec)
	}
	return l
}

// enter starts counting a new phase.
func (l *faultLoad) enter(name string) {
	s := &phaseStats{name: name}
	l.mu.Lock()
	l.phases = append(l.phases, s)
	l.mu.Unlock()
	l.phase.Store(s)
}

func (l *faultLoad) write(w int, rec *history.Recorder) {
	defer l.wg.Done()
	for seq := 0; ; seq++ {
		select {
		case <-l.stop:
			return
		default:
		}
		if l.paused.Load() {
			time.Sleep(50 * time.Millisecond) // the store idles while the test waits for its sweeper
			continue
		}
		l.once(rec, w, seq)
	}
}

// once is one put, its redeem and, for a churned payload, its delete.
func (l *faultLoad) once(rec *history.Recorder, w, seq int) {
	ctx := context.Background()
	st := l.phase.Load()
	churned := l.churn && seq%2 == 1
	k := putKey{w, seq}
	if churned {
		k.seq = 1<<20 + seq%10
	}
	body := payloadOf(k.w, k.seq)
	began := time.Now()
	ref, err := rec.Put(ctx, l.ns, body, claimcheck.PutOptions{})
	took := time.Since(began).Nanoseconds()
	for old := st.maxPutNanos.Load(); took > old && !st.maxPutNanos.CompareAndSwap(old, took); old = st.maxPutNanos.Load() {
	}
	switch {
	case err == nil:
		st.putOK.Add(1)
	case errors.Is(err, claimcheck.ErrUnavailable):
		st.putRefused.Add(1)
		time.Sleep(100 * time.Millisecond) // a client's pause before its retry
		return
	default:
		st.putFail.Add(1)
		st.fail(fmt.Sprintf("put: %v", err))
		time.Sleep(100 * time.Millisecond)
		return
	}
	if !churned {
		l.mu.Lock()
		l.acked[ref] = k
		l.mu.Unlock()
	}
	got, err := rec.Redeem(ctx, ref)
	st.redeemed(ref, got, body, err)
	if churned {
		if err := rec.Delete(ctx, ref); err != nil && !errors.Is(err, claimcheck.ErrUnavailable) {
			st.fail(fmt.Sprintf("delete %s: %v", ref.ID, err))
		}
	}
}

// finish stops the writers and checks the load's phases: no put or
// redeem failed other than unavailable (503), and no answer came only
// by the client's guard.
func (l *faultLoad) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.phases {
		t.Log(s)
		for _, f := range s.failures {
			t.Errorf("%s: %s", s.name, f)
		}
	}
}

// verifyAcked redeems every acknowledged put through rec and compares
// the bytes with the payload put.
func (l *faultLoad) verifyAcked(t *testing.T, rec *history.Recorder) int {
	t.Helper()
	l.mu.Lock()
	acked := make(map[claimcheck.Ref]putKey, len(l.acked))
	for r, k := range l.acked {
		acked[r] = k
	}
	l.mu.Unlock()
	bad := 0
	for ref, k := range acked {
		got, err := rec.Redeem(context.Background(), ref)
		if err != nil || string(got) != string(payloadOf(k.w, k.seq)) {
			bad++
			if bad <= 5 {
				t.Errorf("acknowledged put %s (writer %d, #%d) does not redeem its bytes: %d bytes, %v", ref.ID, k.w, k.seq, len(got), err)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d acknowledged puts do not redeem their bytes", bad, len(acked))
	}
	return len(acked)
}
