package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// chaosConfig: namespace "crash" reaps unconfirmed uploads after a second
// and collects after a second of grace; "keep" has an hour of grace.
const chaosConfig = `
namespaces:
  crash:
    compression: none
    uploads: {confirm_within: 1s, url_ttl: 500ms}
    ttl: {grace_period: 1s}
  keep:
    compression: none
    ttl: {grace_period: 1h}
`

// startKillable runs `claimcheck serve` with extra environment and
// returns its URL and the process, for the test to kill -9.
func startKillable(t *testing.T, bin, dir string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--config", filepath.Join(dir, "config.yaml"), "--data", filepath.Join(dir, "data"))
	cmd.Env = append(append(os.Environ(), "CLAIMCHECK_SERVER="), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Ended already, or killed here: neither error says more.
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-urls:
		return u, cmd
	case <-time.After(60 * time.Second):
		t.Fatal("server did not report its address")
	}
	return "", nil
}

// waitFor polls cond until it holds (bounded): for states that only real
// time (a subprocess's clock) can bring about.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGCChaosKillBetweenWriteAndCommit is the GC chaos test (ADR-0019's
// verification): a real server is killed with SIGKILL after a put wrote
// its object and before it committed. No committed claim may reference
// that object, and once the upload deadline and the grace period have
// passed, `claimcheck gc` removes it. Separately, identical bytes uploaded
// again while their blob is orphaned within its grace period bring the
// blob back to committed, and gc never deletes it.
func TestGCChaosKillBetweenWriteAndCommit(t *testing.T) {
	t.Parallel()
	bin := buildTestBinary(t) // its put stops after the object write when told (claimchecktest)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(chaosConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	marker := filepath.Join(dir, "failpoint-reached")
	url, srv := startKillable(t, bin, dir, "CLAIMCHECK_TEST_FAILPOINT_AFTER_OBJECT_WRITE="+marker)
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("chaos payload "), 5000)
	putErr := make(chan error, 1)
	go func() {
		_, err := c.Put(context.Background(), "crash", bytes.NewReader(payload), claimcheck.PutOptions{})
		putErr <- err
	}()
	waitFor(t, "the failpoint after the object write", func() bool { _, err := os.Stat(marker); return err == nil })
	if err := srv.Process.Kill(); err != nil { // SIGKILL: no cleanup at all
		t.Fatal(err)
	}
	_ = srv.Wait() // killed: its error says only that
	if err := <-putErr; err == nil {
		t.Fatal("the put succeeded although the server was killed before its commit")
	}

	// The object was written; its rows say it was never committed.
	ctx := context.Background()
	objects := func() []string {
		var out []string
		if err := filepath.WalkDir(filepath.Join(data, "blobs"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !blob.IsOwnerMarker(d.Name()) {
				out = append(out, p)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := objects(); len(got) != 1 {
		t.Fatalf("objects after the crash = %v, want the one written before the commit", got)
	}
	debrisKey := filepath.ToSlash(strings.TrimPrefix(objects()[0], filepath.Join(data, "blobs")+string(filepath.Separator)))
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(data, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	owner := func() meta.Blob {
		bs, err := m.BlobsByKeys(ctx, []string{debrisKey})
		if err != nil {
			t.Fatal(err)
		}
		return bs[debrisKey]
	}
	if b := owner(); b.State != meta.BlobStaging {
		t.Fatalf("row of the crashed upload's object = %+v, want staging", b)
	}
	if refs, err := m.LiveRefs(ctx, []string{owner().ID}); err != nil || refs[owner().ID] != 1 {
		t.Fatalf("live claims of the crashed upload's blob = %v, %v; want its one pending claim", refs, err)
	}
	blobID := owner().ID
	m.Close()

	// Restart without the failpoint. Identical bytes, stored, deleted, then
	// stored again inside the grace period, flip the orphan back.
	url, _ = startKillable(t, bin, dir)
	if c, err = client.New(url); err != nil {
		t.Fatal(err)
	}
	kept := bytes.Repeat([]byte("kept payload "), 4000)
	first, err := c.Put(ctx, "keep", bytes.NewReader(kept), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	again, err := c.Put(ctx, "keep", bytes.NewReader(kept), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// gc until the crashed upload's deadline and grace have passed (real
	// time: the server runs on its own clock) and its object is gone.
	waitFor(t, "gc to collect the crashed upload", func() bool {
		if _, stderr, code := run(t, bin, nil, "gc", "--config", filepath.Join(dir, "config.yaml"), "--data", data); code != 0 {
			t.Fatalf("gc: exit %d: %s", code, stderr)
		}
		for _, p := range objects() {
			if strings.Contains(p, blobID) {
				return false
			}
		}
		return true
	})
	m, err = sqlmeta.Open(ctx, "sqlite:"+filepath.Join(data, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if b, err := m.Blob(ctx, blobID); err != nil || b.State != meta.BlobDeleted {
		t.Errorf("crashed upload's blob = %+v, %v; want deleted", b, err)
	}
	cl, err := m.Claim(ctx, again.ID)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := m.Blob(ctx, cl.BlobID)
	if err != nil || shared.State != meta.BlobCommitted {
		t.Errorf("blob of the re-uploaded bytes = %+v, %v; want committed (flipped back)", shared, err)
	}
	if c1, _ := m.Claim(ctx, first.ID); c1.BlobID != cl.BlobID {
		t.Errorf("re-upload wrote blob %s instead of reviving %s", cl.BlobID, c1.BlobID)
	}
	p, err := c.Redeem(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, kept) {
		t.Fatalf("redeem after gc: %d bytes, %v", len(got), err)
	}
	stdout, stderr, code := run(t, bin, nil, "fsck", "--json", "--config", filepath.Join(dir, "config.yaml"), "--data", data)
	var rep struct {
		Missing []json.RawMessage `json:"missing_objects"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil {
		t.Errorf("fsck after the chaos: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
