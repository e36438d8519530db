package systemtest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDownloadTools: wget, aria2c and curl download a claim the way their
// users do (ADR 0255). A full redeem carries Content-Length for a client
// that does not read trailers, so a cut connection is never a complete
// file: wget and curl fail on it, and wget with retries and aria2c -c
// continue it with a range to the exact bytes put; aria2c -x4 splits the
// download into ranges; ranges of the same claim still answer exactly.
// scripts/test.sh installs wget and aria2 (Debian packages) when it runs
// as root; without them the test skips.
func TestDownloadTools(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"curl", "wget", "aria2c"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: skipping (scripts/test.sh installs wget and aria2 when run as root)", tool)
		}
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("namespaces:\n  raw:\n    compression: none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	direct := startServer(t, bin, dir, "--config", cfg)
	cp := &cuttingProxy{limit: 1 << 20}
	proxied := cp.start(t, direct)

	data := make([]byte, 6<<20)
	rand.Read(data)
	in := filepath.Join(dir, "in.bin")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	refJSON, stderr, code := run(t, bin, nil, "put", "--server="+direct, "--ns", "raw", in)
	if code != 0 {
		t.Fatalf("put: exit %d: %s", code, stderr)
	}
	var ref struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(refJSON), &ref); err != nil {
		t.Fatalf("put answered %q: %v", refJSON, err)
	}
	path := "/v1/claims/" + ref.ID
	out := t.TempDir()
	tool := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = out
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	same := func(what, file string) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(out, file))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %s has %d bytes (%v), not the %d put", what, file, len(got), err, len(data))
		}
	}
	ranges := func() []string {
		cp.mu.Lock()
		defer cp.mu.Unlock()
		r := cp.ranges
		cp.ranges = nil
		return r
	}

	// The length is announced, and a whole download is the payload.
	if o, err := tool("curl", "-sS", "-D", "headers", "-o", "curl.bin", direct+path); err != nil {
		t.Fatalf("curl: %v: %s", err, o)
	}
	same("curl", "curl.bin")
	if h, _ := os.ReadFile(filepath.Join(out, "headers")); !strings.Contains(strings.ToLower(string(h)), "content-length: "+strconv.Itoa(len(data))) {
		t.Fatalf("a full redeem for curl announces no Content-Length:\n%s", h)
	}

	// A cut connection: a failure, never a complete file.
	cp.cut.Store(true)
	if o, err := tool("curl", "-sS", "-o", "cut-curl.bin", proxied+path); err == nil {
		t.Fatalf("curl reported a cut download complete: %s", o)
	}
	if o, err := tool("wget", "-q", "-t", "1", "-O", "cut-wget.bin", proxied+path); err == nil {
		t.Fatalf("wget reported a cut download complete: %s", o)
	}
	if o, err := tool("aria2c", "-q", "--max-tries=1", "-o", "aria.bin", proxied+path); err == nil {
		t.Fatalf("aria2c reported a cut download complete: %s", o)
	}
	// wget retries a cut download from where it stopped, with a range.
	ranges()
	if o, err := tool("wget", "-q", "-t", "20", "--waitretry=0", "-c", "-O", "wget.bin", proxied+path); err != nil {
		t.Fatalf("wget with retries over a cutting connection: %v: %s", err, o)
	}
	same("wget resumed over cuts", "wget.bin")
	if r := ranges(); len(r) < 5 {
		t.Fatalf("wget continued with ranges %v; want one per cut (each answer is cut after 1 MiB)", r)
	}

	// aria2c -c continues its own partial file (no second copy).
	cp.cut.Store(false)
	if o, err := tool("aria2c", "-q", "-c", "-o", "aria.bin", proxied+path); err != nil {
		t.Fatalf("aria2c -c: %v: %s", err, o)
	}
	same("aria2c -c", "aria.bin")
	if r := ranges(); len(r) != 1 || r[0] == "bytes=0-" {
		t.Fatalf("aria2c -c asked for %v; want one range from where the cut left it", r)
	}
	if extra, _ := filepath.Glob(filepath.Join(out, "aria.1.bin")); len(extra) > 0 {
		t.Fatalf("aria2c -c downloaded the file again as %v", extra)
	}

	// aria2c -x4 splits the claim into ranges on four connections.
	if o, err := tool("aria2c", "-q", "-x4", "-s4", "-k1M", "--min-split-size=1M", "-o", "split.bin", proxied+path); err != nil {
		t.Fatalf("aria2c -x4: %v: %s", err, o)
	}
	same("aria2c -x4", "split.bin")
	if r := ranges(); len(r) < 2 {
		t.Fatalf("aria2c -x4 asked for ranges %v; want the download split", r)
	}

	// A range of the same claim answers exactly its bytes.
	if o, err := tool("curl", "-sS", "-f", "-r", "1000-1999", "-o", "range.bin", direct+path); err != nil {
		t.Fatalf("curl -r: %v: %s", err, o)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "range.bin")); !bytes.Equal(got, data[1000:2000]) {
		t.Fatalf("curl -r 1000-1999: %d bytes, not the payload's", len(got))
	}
}
