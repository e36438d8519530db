package systemtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// TestStalledCommitAnswers503 runs a server on a PostgreSQL cluster of
// its own whose commits stop completing: synchronous_standby_names names
// a standby that never connects, so every commit waits for it for ever
// (what a promoted primary still configured for a synchronous standby
// does). A put must then answer 503 with Retry-After, naming
// metadata_timeout, rather than hang (ADR 0286); the HTTP client's own
// timeout is only the guard that turns a hang into a failure. Once the
// standby requirement is lifted, puts work again and every put
// acknowledged before the stall redeems its bytes.
//
// It needs the PostgreSQL server binaries (scripts/postgres.sh finds
// them) and, like the other PostgreSQL tests, runs where
// TEST_DATABASE_URL is set; the cluster is its own, since the setting
// is the whole cluster's.
func TestStalledCommitAnswers503(t *testing.T) {
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("TEST_DATABASE_URL is not set: skipping (scripts/test.sh starts PostgreSQL and sets it)")
	}
	dsn, admin := ownPostgres(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claimcheck.yaml")
	// synchronous_commit=on for the server's sessions: scripts/postgres.sh
	// starts the cluster with it off, and an asynchronous commit never
	// waits for a standby.
	yaml := fmt.Sprintf("metadata: %q\nstorage: %q\nmetadata_timeout: 2s\nsweeper: { interval: 100ms }\n",
		dsn+"&synchronous_commit=on", "file://"+filepath.Join(dir, "blobs"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, bin, cfg)
	// Before the server stops (cleanups run last first): a commit left
	// waiting completes, so a failed run ends instead of hanging too.
	t.Cleanup(func() { setStandbyNames(t, admin, "") })
	ctx := context.Background()

	acked := map[claimcheck.Ref][]byte{}
	for i := range 5 {
		body := bytes.Repeat([]byte{byte('a' + i)}, 100<<10)
		ref, err := r.client.Put(ctx, "stall", bytes.NewReader(body), claimcheck.PutOptions{})
		if err != nil {
			t.Fatalf("put %d before the stall: %v", i, err)
		}
		acked[ref] = body
	}

	setStandbyNames(t, admin, "nobody")
	began := time.Now()
	status, header, text := rawPut(t, r.url, []byte("stalled put"))
	t.Logf("put with commits stalled: %d after %s (metadata_timeout 2s)", status, time.Since(began).Round(time.Millisecond))
	if status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" || !strings.Contains(text, "metadata_timeout") {
		t.Errorf("put with commits stalled = %d, Retry-After %q, %s; want 503 with Retry-After naming metadata_timeout", status, header.Get("Retry-After"), text)
	}

	setStandbyNames(t, admin, "")
	deadline := time.Now().Add(time.Minute)
	for {
		status, _, text = rawPut(t, r.url, []byte("after the stall"))
		if status == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("put after the stall was lifted = %d %s; want 201", status, text)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for ref, want := range acked {
		if got := redeemAll(t, r.client, ref); !bytes.Equal(got, want) {
			t.Errorf("redeem %s after the stall: %d bytes, want the %d acknowledged", ref.ID, len(got), len(want))
		}
	}
}

// rawPut puts body over plain HTTP, so the test sees the status and
// headers, with a client timeout far past the server's bound: the guard
// that fails a server that hangs.
func rawPut(t *testing.T, base string, body []byte) (int, http.Header, string) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second}
	req, err := http.NewRequest(http.MethodPut, base+"/v1/namespaces/stall/claims", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("put: no answer (the server hung): %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// redeemAll reads a claim's payload whole.
func redeemAll(t *testing.T, c *client.Client, ref claimcheck.Ref) []byte {
	t.Helper()
	p, err := c.Redeem(context.Background(), ref)
	if err != nil {
		t.Fatalf("redeem %s: %v", ref.ID, err)
	}
	defer p.Close()
	b, err := io.ReadAll(p)
	if err != nil {
		t.Fatalf("redeem %s: %v", ref.ID, err)
	}
	return b
}

// setStandbyNames sets synchronous_standby_names on the whole cluster
// ("" resets it) and waits until a synchronous commit on a new session
// stalls, or completes again: the reload reaches the processes that
// decide on their own time.
func setStandbyNames(t *testing.T, admin *sql.DB, names string) {
	t.Helper()
	ctx := context.Background()
	stmt := "ALTER SYSTEM RESET synchronous_standby_names"
	if names != "" {
		stmt = "ALTER SYSTEM SET synchronous_standby_names = '" + names + "'"
	}
	if _, err := admin.ExecContext(ctx, stmt); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); commitStalls(t, admin) != (names != ""); {
		if time.Now().After(deadline) {
			t.Fatalf("synchronous_standby_names = %q: commits did not follow within 30s", names)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// commitStalls reports whether a synchronous commit on a new session
// fails to complete within a second.
func commitStalls(t *testing.T, admin *sql.DB) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := admin.Conn(ctx)
	if err != nil {
		return true
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET synchronous_commit = on"); err != nil {
		return true
	}
	_, err = conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS stall_probe (at timestamptz); INSERT INTO stall_probe VALUES (now())")
	return err != nil
}

var exportLine = regexp.MustCompile(`export TEST_DATABASE_URL='([^']+)'`)

// ownPostgres starts a PostgreSQL cluster for this test alone with
// scripts/postgres.sh and stops it when the test ends.
func ownPostgres(t *testing.T) (dsn string, admin *sql.DB) {
	t.Helper()
	dir, err := os.MkdirTemp("", "claimcheck-stall-")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join("..", "..", "scripts", "postgres.sh")
	t.Cleanup(func() {
		if out, err := exec.Command("bash", script, "stop", dir).CombinedOutput(); err != nil {
			t.Logf("postgres.sh stop: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
	})
	var out []byte
	for attempt := range 3 { // a start the machine refuses (a port taken meanwhile) is tried again
		out, err = exec.Command("bash", script, "start", dir).Output()
		if err == nil {
			break
		}
		t.Logf("postgres.sh start, attempt %d: %v", attempt+1, err)
		_ = exec.Command("bash", script, "stop", dir).Run()
		_ = os.RemoveAll(filepath.Join(dir, "pg"))
	}
	m := exportLine.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("postgres.sh start: %v\n%s", err, out)
	}
	dsn = string(m[1])
	admin, err = sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin.SetMaxIdleConns(0) // every check a new session, which reads the reloaded settings
	t.Cleanup(func() { _ = admin.Close() })
	return dsn, admin
}
