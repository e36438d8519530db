package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// TestPatroniFailover runs two servers on a PostgreSQL made highly
// available by Patroni (scripts/patroni.sh: three nodes in synchronous
// mode) and on MinIO, under four writers that put and redeem through the
// history recorder, while the primary goes away three ways in turn:
//
//	(a) kill -9 of the leader's Patroni and PostgreSQL: a failover
//	(b) a planned switchover (Patroni's REST API, POST /switchover)
//	(c) the node killed in (a) started again: it rejoins as a replica
//	    (rewound with pg_rewind when its history went past the new
//	    primary's)
//
// The servers reach the primary through a multi-host URL with
// target_session_attrs=read-write (ADR 0288). After each scenario every
// put acknowledged so far redeems its bytes, the clients have seen only
// successes or unavailable (503: retry), never a 500 or wrong bytes, and
// a lease row is renewed by a holder on the new primary (the sweeper's
// leases follow the failover). The window of refusals is logged, not
// asserted. The history checker judges the whole run at the end, with
// the store's inventory (fsck): every object owned.
//
// One round (a, b, c) by default; CLAIMCHECK_TEST_PATRONI_ROUNDS=N runs
// N rounds, each against the leader of the moment.
func TestPatroniFailover(t *testing.T) {
	base := os.Getenv("TEST_PATRONI_DSN")
	if base == "" {
		t.Skip("TEST_PATRONI_DSN is not set: skipping the failover test (scripts/test.sh starts scripts/patroni.sh where PostgreSQL's server binaries are installed)")
	}
	rounds := 1
	if v := os.Getenv("CLAIMCHECK_TEST_PATRONI_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CLAIMCHECK_TEST_PATRONI_ROUNDS %q: want a positive integer", v)
		}
		rounds = n
	}
	ha := patroniCluster(t)
	dsn, admin := patroniSchema(t, base)
	storage, _, _ := testsvc.S3(t)
	bin := buildBinary(t)
	cfg := writePatroniConfig(t, dsn, storage)
	// One first, so that the schema migrations run once.
	replicas := []*replica{startReplica(t, bin, cfg)}
	replicas = append(replicas, startReplica(t, bin, cfg))
	hist := recordHistory(t, "patroni-failover")
	load := newFailoverLoad(hist, replicas)
	load.start(4)

	for round := 1; round <= rounds; round++ {
		killed := ha.leader(t)
		leases := leaseExpiries(t, admin)
		load.scenario(t, fmt.Sprintf("round %d (a) kill -9 of leader %s", round, killed), func() {
			ha.kill(t, killed)
		}, func() bool { return ha.leaderOtherThan(killed) != "" })
		checkAfterFailover(t, load, admin, leases)

		var from string
		leases = leaseExpiries(t, admin)
		load.scenario(t, fmt.Sprintf("round %d (b) switchover", round), func() {
			from = ha.switchover(t)
		}, func() bool { return ha.leaderOtherThan(from) != "" })
		checkAfterFailover(t, load, admin, leases)

		leases = leaseExpiries(t, admin)
		load.scenario(t, fmt.Sprintf("round %d (c) %s rejoins", round, killed), func() {
			ha.startNode(t, killed)
		}, func() bool { return ha.isReplica(killed) && streamingReplicas(admin) == 2 })
		checkAfterFailover(t, load, admin, leases)
		if t.Failed() {
			break
		}
	}
	load.stop()
	load.report(t)
	if _, err := load.recs[0].Usage(context.Background(), "load"); err != nil {
		t.Errorf("usage of load: %v", err)
	}
	// The store itself at the end: every object owned by a row, however
	// the puts refused during the failovers ended.
	hist.inventory(t, bin, cfg, 30*time.Second)
	hist.check(t)
}

// patroni is the cluster scripts/patroni.sh started: its nodes' REST
// URLs (node1, node2, node3 in TEST_PATRONI_REST's order) and directory.
type patroni struct {
	dir   string
	rest  map[string]string // node name → REST URL
	nodes []string
	hc    *http.Client
}

func patroniCluster(t *testing.T) *patroni {
	t.Helper()
	dir := os.Getenv("TEST_PATRONI_DIR")
	urls := strings.Split(os.Getenv("TEST_PATRONI_REST"), ",")
	if dir == "" || len(urls) != 3 {
		t.Fatalf("TEST_PATRONI_DIR %q and TEST_PATRONI_REST %q: want scripts/patroni.sh's directory and three REST URLs", dir, os.Getenv("TEST_PATRONI_REST"))
	}
	p := &patroni{dir: dir, rest: map[string]string{}, hc: &http.Client{Timeout: 5 * time.Second}}
	for i, u := range urls {
		n := fmt.Sprintf("node%d", i+1)
		p.nodes = append(p.nodes, n)
		p.rest[n] = u
	}
	return p
}

// answers reports whether node's REST API answers path with 200 (Patroni
// answers /primary so on the leader, /replica on a running replica).
func (p *patroni) answers(node, path string) bool {
	resp, err := p.hc.Get(p.rest[node] + path)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (p *patroni) isReplica(node string) bool { return p.answers(node, "/replica") }

// leaderOtherThan is the node other than old that leads now, "" if none.
func (p *patroni) leaderOtherThan(old string) string {
	for _, n := range p.nodes {
		if n != old && p.answers(n, "/primary") {
			return n
		}
	}
	return ""
}

// leader waits for the node that leads.
func (p *patroni) leader(t *testing.T) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if n := p.leaderOtherThan(""); n != "" {
			return n
		}
	}
	t.Fatal("no Patroni node leads")
	return ""
}

// kill ends node's Patroni and PostgreSQL with SIGKILL, by their pid
// files: the machine under the primary gone at once.
func (p *patroni) kill(t *testing.T, node string) {
	t.Helper()
	for _, f := range []string{filepath.Join(p.dir, node, "patroni.pid"), filepath.Join(p.dir, node, "data", "postmaster.pid")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 %d (%s): %v", pid, f, err)
		}
	}
}

// switchover asks the leader's REST API to hand leadership to its
// synchronous standby (the only candidate in synchronous mode) and
// returns the node that led. The leader is looked up at each attempt:
// one refused while the cluster settles is tried again.
func (p *patroni) switchover(t *testing.T) string {
	t.Helper()
	for attempt := 0; ; attempt++ {
		leader := p.leader(t)
		resp, err := p.hc.Post(p.rest[leader]+"/switchover", "application/json", strings.NewReader(fmt.Sprintf(`{"leader": %q}`, leader)))
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("switchover from %s accepted", leader)
				return leader
			}
			err = fmt.Errorf("answered %s", resp.Status)
		}
		if attempt == 30 {
			t.Fatalf("switchover from %s: %v", leader, err)
		}
		time.Sleep(time.Second)
	}
}

// startNode starts node's Patroni again with scripts/patroni.sh.
func (p *patroni) startNode(t *testing.T, node string) {
	t.Helper()
	script := filepath.Join("..", "..", "scripts", "patroni.sh")
	if out, err := exec.Command("bash", script, "start-node", filepath.Dir(p.dir), node).CombinedOutput(); err != nil {
		t.Fatalf("patroni.sh start-node %s: %v\n%s", node, err, out)
	}
}

// patroniSchema makes a schema of the test's own on the cluster and
// returns the DSN with it as search path, and a pool on it whose every
// query is a new session (a session does not outlive a failover).
func patroniSchema(t *testing.T, base string) (string, *sql.DB) {
	t.Helper()
	schema := "t_" + strings.ToLower(rand.Text())[:16]
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	admin, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	admin.SetMaxIdleConns(0)
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
		_ = admin.Close()
	})
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	return u.String(), admin
}

// writePatroniConfig writes the servers' config: claims that outlive the
// test, sweeper leases of short intervals (so the handover is seen
// soon), and a metadata_timeout that bounds a wait on a primary that
// went away (ADR 0286).
func writePatroniConfig(t *testing.T, dsn, storage string) string {
	t.Helper()
	cfg := fmt.Sprintf(`metadata: %q
storage: %q
metadata_timeout: 3s
defaults: false
namespaces:
  load:
    threshold: 1
    ttl: {max_age: 1h, retention_after_read: 1h, grace_period: 1s}
sweeper:
  interval: 100ms
  idle_grace: 50ms
  max_lag: 200ms
`, dsn, storage)
	path := filepath.Join(t.TempDir(), "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// streamingReplicas counts the replicas streaming from the primary (-1:
// no primary answers).
func streamingReplicas(admin *sql.DB) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'").Scan(&n); err != nil {
		return -1
	}
	return n
}

// leaseExpiries is every lease row's expiry (Unix nanoseconds) by name.
func leaseExpiries(t *testing.T, admin *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := admin.Query(`SELECT name, expires_at FROM leases`)
	if err != nil {
		t.Fatalf("leases: %v", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var exp int64
		if err := rows.Scan(&name, &exp); err != nil {
			t.Fatal(err)
		}
		out[name] = exp
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("leases: %v", err)
	}
	return out
}

// checkAfterFailover checks what a scenario must leave: every put
// acknowledged since the last check redeems its bytes (through either
// server), and a lease is held past what it was before the scenario (a
// take or renewal on the primary of now: the sweeper's and dispatcher's
// leases followed the failover).
func checkAfterFailover(t *testing.T, load *failoverLoad, admin *sql.DB, before map[string]int64) {
	t.Helper()
	for i, cl := range load.unchecked() {
		got, err := retryUnavailable(func() ([]byte, error) {
			return load.recs[i%len(load.recs)].Redeem(context.Background(), cl.ref)
		})
		if err != nil {
			t.Errorf("acknowledged put %s lost: %v", cl.ref.ID, err)
		} else if !bytes.Equal(got, cl.data) {
			t.Errorf("acknowledged put %s redeems %d bytes, not the %d put", cl.ref.ID, len(got), len(cl.data))
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		rows, err := admin.Query(`SELECT name, holder, expires_at FROM leases WHERE holder <> '' AND expires_at > $1`, time.Now().UnixNano())
		if err == nil {
			for rows.Next() {
				var name, holder string
				var exp int64
				if rows.Scan(&name, &holder, &exp) == nil && exp > before[name] {
					_ = rows.Close()
					t.Logf("lease %s held past its expiry before the scenario, by %s", name, holder)
					return
				}
			}
			_ = rows.Close()
		}
		if time.Now().After(deadline) {
			t.Errorf("no lease taken or renewed on the new primary within a minute (last error: %v)", err)
			return
		}
	}
}

// retryUnavailable calls f until it answers other than unavailable, for
// up to a minute.
func retryUnavailable(f func() ([]byte, error)) ([]byte, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := f()
		if err == nil || !errors.Is(err, claimcheck.ErrUnavailable) || time.Now().After(deadline) {
			return b, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
