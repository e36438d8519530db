//go:build linux

package systemtest

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/history"
	"github.com/claimcheck/claimcheck/internal/testkit/netns"
)

// TestPartitions runs two claimcheck replicas on PostgreSQL and MinIO,
// each process in a network namespace of its own, and cuts paths
// between them while four writers (two per replica) put, redeem and
// delete through the history recorder (ADR 0290):
//
//	(a) the replica holding the sweeper's maintenance lease is cut from
//	    PostgreSQL but not from storage: the other replica takes the
//	    lease once its term lapses, and the cut one deletes no object
//	    from then on;
//	(b) a replica cut from storage answers 503, never other bytes, and
//	    works again once healed.
//
// At the end every acknowledged put that was not deleted redeems its
// bytes (no referenced blob was collected), the history checker passes
// and `claimcheck fsck` is clean. CLAIMCHECK_TEST_FAULT_DURATION repeats
// both cuts on a random schedule from CLAIMCHECK_TEST_FAULT_SEED.
func TestPartitions(t *testing.T) {
	plan := newFaultPlan(t)
	p := startPartitionRig(t)
	hist := recordHistory(t, "partitions")
	recs := []*history.Recorder{hist.rec.With(p.replicas[0].client), hist.rec.With(p.replicas[0].client),
		hist.rec.With(p.replicas[1].client), hist.rec.With(p.replicas[1].client)}
	load := startLoad("load", recs, true)
	p.load, p.hist = load, hist
	time.Sleep(3 * time.Second) // healthy load, and garbage for the sweeper
	if plan.long {
		end := time.Now().Add(plan.duration)
		for time.Now().Before(end) {
			if plan.rng.IntN(2) == 0 {
				p.cutLeaseHolderFromDatabase(plan.pause(2*time.Second, 20*time.Second))
			} else {
				p.cutFromStorage(plan.rng.IntN(2), plan.pause(2*time.Second, 20*time.Second))
			}
			load.enter("between cuts")
			time.Sleep(plan.pause(time.Second, 10*time.Second))
		}
	} else {
		p.cutLeaseHolderFromDatabase(3 * time.Second)
		p.cutFromStorage(0, 6*time.Second)
	}
	load.enter("after the cuts")
	time.Sleep(3 * time.Second)
	load.finish(t)
	n := load.verifyAcked(t, hist.rec.With(p.replicas[1].client))
	t.Logf("%d acknowledged puts redeemed their bytes", n)
	hist.check(t)
	if out, code := runIn(t, p.net.Bridge, faultEnv(), p.bin, "fsck", "--config", p.cfg); code != 0 {
		t.Errorf("fsck after the cuts: exit %d\n%s", code, out)
	}
}

// partitionRig is the network of TestPartitions: PostgreSQL, MinIO and
// two replicas, each in its own namespace.
type partitionRig struct {
	t        *testing.T
	net      *netns.Network
	pg, s3   *netns.Node
	nodes    []*netns.Node // the replicas' namespaces
	replicas []*replica
	db       *sql.DB // the test's own connection, from the bridge
	bin, cfg string
	load     *faultLoad
	hist     *recorded
}

func startPartitionRig(t *testing.T) *partitionRig {
	t.Helper()
	minio := minioBinary(t)
	p := &partitionRig{t: t, net: netns.New(t), bin: buildBinary(t)}
	var err error
	if p.pg, err = p.net.AddNode("pg"); err != nil {
		t.Fatal(err)
	}
	if p.s3, err = p.net.AddNode("minio"); err != nil {
		t.Fatal(err)
	}
	dsn := postgresIn(t, p.pg)
	p.db = openFrom(t, p.net.Bridge, dsn)

	dir := t.TempDir()
	c := &minioCluster{t: t, bin: minio, dir: dir, nodes: []*netns.Node{p.s3}, servers: make([]*netServer, 1),
		args: []string{"server", "--quiet", "--address", ":9000", "--console-address", ":9001", filepath.Join(dir, "drive")}}
	c.start(0)
	c.waitHealthy(p.net.Bridge, 2*time.Minute)
	c.makeBucket(p.net.Bridge)

	// metadata_timeout under the maintenance lease's term, so a cut
	// replica's renewal fails within it (ADR 0286). The server ends a
	// session idle in a transaction for twice that bound, longer than
	// any of claimcheck's: what a replica cut off without a reset left
	// open (and locked) goes then (docs/OPERATIONS.md, "Network
	// partitions").
	p.cfg = filepath.Join(dir, "claimcheck.yaml")
	yaml := fmt.Sprintf(`metadata: %q
metadata_timeout: 2s
storage: %q
storage_timeout: %s
lifecycle: off
defaults: false
namespaces:
  load: { threshold: 1, ttl: { max_age: 24h, grace_period: 1s } }
  expiring: { threshold: 1, ttl: { max_age: 3s, retention_after_read: 1s, grace_period: 1s } }
sweeper: { interval: 200ms, idle_grace: 500ms, max_runtime_per_run: 2s, backstop_interval: 2s, backstop_grace: 10s }
`, dsn+"&idle_in_transaction_session_timeout=4s", c.storageURL(), distStorageTimeout)
	if err := os.WriteFile(p.cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		node, err := p.net.AddNode(fmt.Sprintf("replica%d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		p.nodes = append(p.nodes, node)
		p.replicas = append(p.replicas, serveIn(t, p.net, node, p.bin, p.cfg, faultEnv()))
	}
	return p
}

// postgresIn starts a PostgreSQL cluster of the test's own inside node,
// listening on the node's address (scripts/postgres.sh with PG_HOST),
// and stops it when the test ends.
func postgresIn(t *testing.T, node *netns.Node) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "claimcheck-partition-")
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "postgres.sh"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := node.Command("bash", script, "stop", dir).CombinedOutput(); err != nil {
			t.Logf("postgres.sh stop: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
	})
	var out []byte
	for attempt := range 3 { // a start the machine refuses is tried again
		cmd := node.Command("bash", script, "start", dir)
		cmd.Env = append(os.Environ(), "PG_HOST="+node.Addr.String())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err = cmd.Output()
		if err == nil {
			break
		}
		t.Logf("postgres.sh start in %s, attempt %d: %v\n%s", node.Name, attempt+1, err, stderr.String())
		_ = node.Command("bash", script, "stop", dir).Run()
		_ = os.RemoveAll(filepath.Join(dir, "pg"))
	}
	m := exportLine.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("postgres.sh start: %v\n%s", err, out)
	}
	return string(m[1])
}

// openFrom opens dsn with connections made inside node.
func openFrom(t *testing.T, node *netns.Node, dsn string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = node.DialContext
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// maintenanceHolder is the index of the replica holding the sweeper's
// maintenance lease (-1: none holds it now). A holder names its
// process id; `ip netns exec` execs the server, so the id is the
// replica's.
func (p *partitionRig) maintenanceHolder() int {
	var holder string
	err := p.db.QueryRowContext(context.Background(),
		"SELECT holder FROM leases WHERE name = 'sweeper-maintenance' AND expires_at > $1", time.Now().UnixNano()).Scan(&holder)
	if err != nil {
		return -1
	}
	for i, r := range p.replicas {
		if strings.Contains(holder, "/"+strconv.Itoa(r.cmd.Process.Pid)+"/") {
			return i
		}
	}
	return -1
}

// waitHolder pauses the writers (the lease is taken by an idle store
// with due work) until want(holder) holds, and returns the holder. The
// due work is claims of the namespace "expiring" (max_age 3s) put
// through replica via (-1: either) every few seconds of the wait.
func (p *partitionRig) waitHolder(what string, via int, want func(int) bool) int {
	p.t.Helper()
	p.load.paused.Store(true)
	defer p.load.paused.Store(false)
	deadline := time.Now().Add(time.Minute)
	var seeded time.Time
	for n := 0; ; n++ {
		if h := p.maintenanceHolder(); want(h) {
			return h
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no replica %s the sweeper's maintenance lease within a minute", what)
		}
		if time.Since(seeded) > 4*time.Second {
			r := via
			if r < 0 {
				r = n % 2
			}
			p.seedExpiring(r)
			seeded = time.Now()
		}
		time.Sleep(100 * time.Millisecond) // polling the leases table
	}
}

// seedExpiring puts 100 claims that expire in 3s through replica i,
// recorded in the history.
func (p *partitionRig) seedExpiring(i int) {
	rec := p.hist.rec.With(p.replicas[i].client)
	for k := range 100 {
		if _, err := rec.Put(context.Background(), "expiring", []byte(fmt.Sprintf("expiring %d", k)), claimcheck.PutOptions{}); err != nil {
			p.t.Logf("seed expiring claims through replica %d: %v", i+1, err)
			return
		}
	}
}

// cutLeaseHolderFromDatabase is scenario (a): the maintenance lease's
// holder is cut from PostgreSQL, the other replica takes the lease, and
// the cut replica's object deletes stay where they were when it lost it.
func (p *partitionRig) cutLeaseHolderFromDatabase(after time.Duration) {
	p.t.Helper()
	holder := p.waitHolder("takes", -1, func(h int) bool { return h >= 0 })
	other := 1 - holder
	p.load.enter(fmt.Sprintf("replica %d cut from PostgreSQL", holder+1))
	if err := p.net.Cut(p.nodes[holder], p.pg); err != nil {
		p.t.Fatal(err)
	}
	began := time.Now()
	time.Sleep(time.Second)
	p.t.Logf("sessions of the cut replica PostgreSQL still has, by state: %s", p.sessionsOf(p.nodes[holder]))
	p.waitHolder("else takes", other, func(h int) bool { return h == other })
	p.t.Logf("replica %d cut from PostgreSQL holding the maintenance lease; replica %d took it %s later; the cut replica's sessions then: %s",
		holder+1, other+1, time.Since(began).Round(100*time.Millisecond), p.sessionsOf(p.nodes[holder]))
	atLoss := p.deletes(holder)
	time.Sleep(after) // load on both, the cut replica refusing
	p.waitHolder("sweeps while idle and", other, func(h int) bool { return h == other })
	later := p.deletes(holder)
	p.t.Logf("replica %d object deletes: %v when it lost the lease, %v after %s more cut off (replica %d: %v)",
		holder+1, atLoss, later, after, other+1, p.deletes(other))
	if later != atLoss {
		p.t.Errorf("replica %d deleted %v objects after losing the maintenance lease (cut from PostgreSQL)", holder+1, later-atLoss)
	}
	if err := p.net.Heal(p.nodes[holder], p.pg); err != nil {
		p.t.Fatal(err)
	}
	p.load.enter(fmt.Sprintf("replica %d healed", holder+1))
	time.Sleep(2 * time.Second)
}

// cutFromStorage is scenario (b): replica i is cut from MinIO for down;
// its writers see 503 (the load fails on any other answer, and on bytes
// that differ), and it works again once healed.
func (p *partitionRig) cutFromStorage(i int, down time.Duration) {
	p.t.Helper()
	p.load.enter(fmt.Sprintf("replica %d cut from storage", i+1))
	if err := p.net.Cut(p.nodes[i], p.s3); err != nil {
		p.t.Fatal(err)
	}
	time.Sleep(down)
	if err := p.net.Heal(p.nodes[i], p.s3); err != nil {
		p.t.Fatal(err)
	}
	p.load.enter(fmt.Sprintf("replica %d healed from storage", i+1))
	time.Sleep(3 * time.Second)
}

// sessionsOf lists the server's sessions from node by state: a client
// cut off without a reset leaves its sessions, and their locks, until
// the server notices.
func (p *partitionRig) sessionsOf(node *netns.Node) string {
	rows, err := p.db.QueryContext(context.Background(),
		"SELECT coalesce(state, ''), count(*) FROM pg_stat_activity WHERE client_addr = $1::inet GROUP BY 1 ORDER BY 1", node.Addr.String())
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return err.Error()
		}
		parts = append(parts, fmt.Sprintf("%s %d", state, n))
	}
	return strings.Join(parts, ", ")
}

// deletes is the object deletes replica i has made (its
// claimcheck_blob_operations_total of delete and delete_many, any
// result), read from its /metrics over the bridge.
func (p *partitionRig) deletes(i int) float64 {
	p.t.Helper()
	resp, err := nodeHTTP(p.net.Bridge, 10*time.Second).Get(p.replicas[i].url + "/metrics")
	if err != nil {
		p.t.Fatalf("scrape replica %d: %v", i+1, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		p.t.Fatalf("scrape replica %d: %s", i+1, resp.Status)
	}
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "claimcheck_blob_operations_total{") ||
			!(strings.Contains(line, `operation="delete"`) || strings.Contains(line, `operation="delete_many"`)) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			p.t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}
