package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/cli"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/sweep"
)

// runMain runs the CLI in-process and returns stdout, stderr and the exit
// code.
func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runMainEnv(t, nil, args...)
}

// runMainEnv is runMain with environment variables.
func runMainEnv(t *testing.T, environ map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	var list []string
	for k, v := range environ {
		list = append(list, k+"="+v)
	}
	code := cli.Main(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return environ[k] }, Environ: func() []string { return list },
	})
	return out.String(), errb.String(), code
}

// deniedDeletes is a file store whose deletes fail, like a bucket whose
// policy forbids DeleteObject.
type deniedDeletes struct{ blob.Store }

func (deniedDeletes) Delete(context.Context, string) error {
	return errors.New("injected: access denied")
}

// openDenied opens the store of cfg over the file store of its data
// directory (where offline commands find it) with every delete denied, a
// fake clock and the sweeper off, parking at the first failure. A caller
// that runs an offline command closes the store first; it is closed when
// t ends anyway.
func openDenied(t *testing.T, cfg engine.Config) (*engine.Store, *clock.Fake) {
	t.Helper()
	ctx := context.Background()
	files, err := blob.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(cfg.Data, "blobs")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { files.Close() })
	clk := clock.NewFake(time.Now().Add(-48 * time.Hour))
	cfg.BlobStore, cfg.Clock = deniedDeletes{files}, clk
	cfg.Sweeper = sweep.Config{Disabled: true, MaxAttempts: 1}
	store := enginetest.Open(t, cfg)
	return store, clk
}

// parkDeadLetters puts a claim into each namespace of nss and deletes
// it, then sweeps past the grace period: with deletes denied and
// sweeper.max_attempts 1, each blob is parked at once.
func parkDeadLetters(t *testing.T, store *engine.Store, clk *clock.Fake, nss ...string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range nss {
		ref, err := store.Put(ctx, ns, strings.NewReader("a payload of "+ns+" that will not go away"), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Delete(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Hour) // past the grace period
	if res, err := store.SweepOnce(ctx, 0); err != nil || res.DeleteFailures != len(nss) {
		t.Fatalf("sweep: %+v %v; want %d failed deletes", res, err, len(nss))
	}
}

// TestDLQCommands: a blob whose delete keeps failing is parked; `dlq ls`
// shows it, `dlq retry` puts it back, and `sweep --once` then deletes its
// object. All offline, on the same --data directory serve would use.
func TestDLQCommands(t *testing.T) {
	dir := t.TempDir()
	store, clk := openDenied(t, engine.Config{Data: dir})
	parkDeadLetters(t, store, clk, "photos")
	store.Close()

	out, errOut, code := runMain(t, "dlq", "ls", "--data", dir)
	if code != 0 || !strings.Contains(out, "photos") || !strings.Contains(out, "access denied") {
		t.Fatalf("dlq ls = %d\n%s%s", code, out, errOut)
	}
	blobID := strings.Fields(strings.Split(out, "\n")[1])[0]

	if _, _, code := runMain(t, "dlq", "retry", "--data", dir); code != cli.ExitUsage {
		t.Errorf("dlq retry without ids or --all: exit %d, want usage", code)
	}
	if _, errOut, code := runMain(t, "dlq", "retry", "--data", dir, "b_malformed"); code != cli.ExitUsage || !strings.Contains(errOut, `"b_malformed" is malformed`) {
		t.Errorf("dlq retry of a malformed id: exit %d, %s; want usage", code, errOut)
	}
	const notParked = "b_AAAAAAAAAAAAAAAAAAAAAA"
	out, errOut, code = runMain(t, "dlq", "retry", "--data", dir, blobID, notParked)
	if code != 0 || !strings.Contains(out, "1 dead letters put back") || !strings.Contains(errOut, notParked+" is not a dead letter") {
		t.Fatalf("dlq retry = %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := runMain(t, "dlq", "ls", "--json", "--data", dir); strings.TrimSpace(out) != "[]" {
		t.Errorf("dlq ls after retry = %s, want []", out)
	}
	// The storage works again (no injected failures offline): the next
	// sweep deletes the object.
	out, errOut, code = runMain(t, "sweep", "--once", "--data", dir)
	if code != 0 || !strings.Contains(out, `"blobs_collected":1`) {
		t.Fatalf("sweep --once = %d\n%s%s", code, out, errOut)
	}
	_ = filepath.WalkDir(filepath.Join(dir, "blobs", "photos"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			t.Errorf("object %s left behind after the retried collection", p)
		}
		return nil
	})
}

// TestDLQRemote: `dlq ls` and `dlq retry` through a running server with
// auth on: an admin key sees and retries its tenant's dead letters only,
// a producer key is refused, --server with --data is a usage error, and
// $CLAIMCHECK_SERVER selects the remote mode too. The offline mode keeps
// working beside the server on the same data directory.
func TestDLQRemote(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	store, clk := openDenied(t, engine.Config{
		Data: dir, MetaStore: m,
		Tenants:    map[string]claimcheck.TenantPolicy{"acme": {}, "beta": {}},
		Namespaces: map[string]claimcheck.Policy{"a1": {Tenant: "acme"}, "b1": {Tenant: "beta"}},
	})
	defer store.Close()
	parkDeadLetters(t, store, clk, "a1", "b1")
	keys := auth.New(m, nil)
	token := func(tenant string, role auth.Role) string {
		_, tok, err := keys.Create(ctx, auth.CreateParams{Tenant: tenant, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	acme, beta, producer := token("acme", auth.RoleAdmin), token("beta", auth.RoleAdmin), token("acme", auth.RoleProducer)
	srv := httptest.NewServer(server.New(server.Config{Claims: store, Auth: keys, ClaimNamespace: store.ClaimNamespace}))
	defer srv.Close()

	out, errOut, code := runMain(t, "dlq", "ls", "--server", srv.URL, "--api-key", acme)
	if code != 0 || !strings.Contains(out, " a1 ") || strings.Contains(out, "b1") || !strings.Contains(out, "access denied") {
		t.Fatalf("dlq ls as acme's admin = %d\n%s%s", code, out, errOut)
	}
	a1 := strings.Fields(strings.Split(out, "\n")[1])[0]
	if _, errOut, code := runMain(t, "dlq", "ls", "--server", srv.URL, "--api-key", producer); code != cli.ExitError || !strings.Contains(errOut, "may not admin") {
		t.Errorf("dlq ls as a producer = %d %s, want a permission error", code, errOut)
	}
	if _, errOut, code := runMain(t, "dlq", "ls", "--server", srv.URL, "--data", dir); code != cli.ExitUsage || !strings.Contains(errOut, "one or the other") {
		t.Errorf("dlq ls with --server and --data = %d %s, want usage", code, errOut)
	}
	if _, errOut, code := runMain(t, "dlq", "ls", "--ns", "Bad", "--server", srv.URL); code != cli.ExitUsage || !strings.Contains(errOut, "--ns") {
		t.Errorf("dlq ls --ns Bad = %d %s, want usage naming --ns", code, errOut)
	}

	// From the environment, as beta's admin: beta's only; acme's id is
	// not beta's to see, so retrying it is skipped like an unknown one.
	env := map[string]string{"CLAIMCHECK_SERVER": srv.URL, "CLAIMCHECK_API_KEY": beta}
	out, errOut, code = runMainEnv(t, env, "dlq", "ls", "--json")
	var listed []claimcheck.DeadLetter
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed) != 1 || listed[0].Namespace != "b1" {
		t.Fatalf("dlq ls --json as beta's admin (env) = %d %v\n%s%s", code, err, out, errOut)
	}
	out, errOut, code = runMainEnv(t, env, "dlq", "retry", a1)
	if code != 0 || !strings.Contains(errOut, a1+" is not a dead letter") || !strings.Contains(out, "0 dead letters put back") {
		t.Errorf("beta's admin retrying acme's dead letter = %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = runMain(t, "dlq", "retry", "--all", "--server", srv.URL, "--api-key", acme)
	if code != 0 || !strings.Contains(out, "retrying blob "+a1) || !strings.Contains(out, "1 dead letters put back") {
		t.Fatalf("dlq retry --all as acme's admin = %d\n%s%s", code, out, errOut)
	}
	// Offline, beside the server: beta's dead letter is still parked.
	out, errOut, code = runMain(t, "dlq", "ls", "--json", "--data", dir)
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed) != 1 || listed[0].BlobID == a1 {
		t.Fatalf("dlq ls offline after acme's retry = %d %v\n%s%s", code, err, out, errOut)
	}
	out, errOut, code = runMainEnv(t, env, "dlq", "retry", listed[0].BlobID)
	if code != 0 || !strings.Contains(out, "1 dead letters put back") {
		t.Errorf("beta's admin retrying its dead letter = %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := runMain(t, "dlq", "ls", "--json", "--server", srv.URL, "--api-key", beta); strings.TrimSpace(out) != "[]" {
		t.Errorf("dlq ls after the retries = %s, want []", out)
	}
}

// TestNsCommands: `ns ls` and `ns show` read limits and usage from a
// running server.
func TestNsCommands(t *testing.T) {
	ctx := context.Background()
	store := enginetest.Open(t, engine.Config{
		Namespaces: map[string]claimcheck.Policy{"orders": {Quota: claimcheck.Quota{Bytes: 1 << 20, Claims: 10}}},
		Sweeper:    sweep.Config{Disabled: true},
	})
	if _, err := store.Put(ctx, "orders", strings.NewReader(strings.Repeat("x", 2048)), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	defer srv.Close()

	out, errOut, code := runMain(t, "ns", "ls", "--server", srv.URL)
	if code != 0 {
		t.Fatalf("ns ls = %d\n%s%s", code, out, errOut)
	}
	var row string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "orders ") {
			row = line
		}
	}
	if f := strings.Fields(row); len(f) < 10 || f[1] != "default" || f[2]+f[3] != "2.0KiB" || f[6]+f[7] != "1.0MiB" || f[8] != "1" || f[10] != "10" {
		t.Errorf("ns ls row = %q (fields %q)\n%s", row, f, out)
	}
	if !strings.Contains(out, "TENANT") || !strings.Contains(out, "\ndefault ") {
		t.Errorf("ns ls has no tenant totals:\n%s", out)
	}
	out, errOut, code = runMain(t, "ns", "show", "orders", "--server", srv.URL)
	if code != 0 || !strings.Contains(out, `"used_bytes": 2048`) || !strings.Contains(out, `"claims": 10`) {
		t.Fatalf("ns show = %d\n%s%s", code, out, errOut)
	}
	if _, _, code := runMain(t, "ns", "show", "Bad", "--server", srv.URL); code != cli.ExitUsage {
		t.Errorf("ns show with a bad name: exit %d, want usage", code)
	}
}

// TestFsckReportsQuotaDrift: counters that disagree with the live claims
// (here forged in the database) make fsck report the namespace and fail.
func TestFsckReportsQuotaDrift(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := enginetest.Open(t, engine.Config{Data: dir, Sweeper: sweep.Config{Disabled: true}})
	if _, err := store.Put(ctx, "orders", strings.NewReader("counted once"), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if out, errOut, code := runMain(t, "fsck", "--data", dir); code != 0 || !strings.Contains(out, "quota drift: 0") {
		t.Fatalf("fsck of a sound store = %d\n%s%s", code, out, errOut)
	}

	db, err := sql.Open("sqlite", filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE namespaces SET reserved_bytes = reserved_bytes + 100 WHERE name = 'orders'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, errOut, code := runMain(t, "fsck", "--data", dir)
	if code != cli.ExitError || !strings.Contains(out, "quota drift: 1 namespaces") ||
		!strings.Contains(out, "namespace orders: counters used=12 reserved=100") {
		t.Fatalf("fsck with forged counters = %d\n%s%s", code, out, errOut)
	}
}
