package systemtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
)

// Master key rotation through the real binary, as docs/OPERATIONS.md
// describes it: put under master key A, configure B with A previous,
// rewrap-keys, check with --dry-run, drop A, and the claim still redeems.
func TestCLIRewrapKeys(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(cfg, []byte("namespaces:\n  vault:\n    encryption: aes-256-gcm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := func(b byte) (string, string) {
		raw := bytes.Repeat([]byte{b}, 32)
		return base64.StdEncoding.EncodeToString(raw), engine.MasterKeyID(raw)
	}
	keyA, idA := key(1)
	keyB, idB := key(2)
	keyC, _ := key(3)
	store := []string{"--config", cfg, "--data", dir}

	t.Setenv("CLAIMCHECK_MASTER_KEY", keyA)
	t.Setenv("CLAIMCHECK_PREVIOUS_MASTER_KEYS", "")
	first := "--server=" + startServer(t, bin, dir, store...)
	in := filepath.Join(dir, "photos.json")
	if err := os.WriteFile(in, photosJSON(100<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	refJSON, stderr, code := run(t, bin, nil, "put", first, "--ns", "vault", in)
	if code != 0 {
		t.Fatalf("put: exit %d: %s", code, stderr)
	}
	ref := strings.TrimSpace(refJSON)

	// B without A: the key cannot be rewrapped, and the error names both.
	t.Setenv("CLAIMCHECK_MASTER_KEY", keyB)
	stdout, stderr, code := run(t, bin, nil, append([]string{"rewrap-keys"}, store...)...)
	if code != 1 || !strings.Contains(stdout, "failed: 1") || !strings.Contains(stdout, idA) || !strings.Contains(stdout, idB) || !strings.Contains(stderr, "could not be rewrapped") {
		t.Fatalf("rewrap-keys without the old master key: exit %d\n%s%s", code, stdout, stderr)
	}

	// B with A (and an unused C) previous, in the comma-separated
	// environment form.
	t.Setenv("CLAIMCHECK_PREVIOUS_MASTER_KEYS", keyC+", "+keyA)
	stdout, stderr, code = run(t, bin, nil, append([]string{"rewrap-keys", "--dry-run"}, store...)...)
	if code != 1 || !strings.Contains(stdout, "would rewrap: 1") || !strings.Contains(stdout, idA+": 1") || !strings.Contains(stderr, "1 live data keys are wrapped by a master key other than master_key") {
		t.Fatalf("rewrap-keys --dry-run before the rewrap: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = run(t, bin, nil, append([]string{"rewrap-keys"}, store...)...)
	if code != 0 || !strings.Contains(stdout, "rewrapped: 1, already current: 0, failed: 0") || !strings.Contains(stdout, idB+" (master_key): 1") {
		t.Fatalf("rewrap-keys: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = run(t, bin, nil, append([]string{"rewrap-keys", "--dry-run", "--json"}, store...)...)
	var rep claimcheck.RewrapReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 || rep.Pending() != 0 || rep.AlreadyCurrent != 1 || rep.ByMasterKey[idB] != 1 {
		t.Fatalf("rewrap-keys --dry-run --json after the rewrap: exit %d, %+v, %v\n%s%s", code, rep, err, stdout, stderr)
	}

	// A dropped: a server with B alone serves the claim, and the audit
	// trail has the rewrap, by the CLI.
	t.Setenv("CLAIMCHECK_PREVIOUS_MASTER_KEYS", "")
	second := "--server=" + startServer(t, bin, dir, store...)
	out := filepath.Join(dir, "copy.json")
	if _, stderr, code := run(t, bin, nil, "get", second, ref, "-o", out); code != 0 {
		t.Fatalf("get after dropping the old master key: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, photosJSON(100<<10)) {
		t.Fatal("the payload changed")
	}
	stdout, stderr, code = run(t, bin, nil, "events", second, "--ns", "vault")
	if code != 0 || !strings.Contains(stdout, `"data_key_rewrapped"`) || !strings.Contains(stdout, `"actor":"cli`) {
		t.Fatalf("events of vault: exit %d\n%s%s", code, stdout, stderr)
	}

	// Config mistakes are refused, naming the entry.
	t.Setenv("CLAIMCHECK_PREVIOUS_MASTER_KEYS", keyA+","+keyB)
	if _, stderr, code := run(t, bin, nil, append([]string{"rewrap-keys"}, store...)...); code != 1 || !strings.Contains(stderr, "previous_master_keys[1]: the same key as master_key") {
		t.Fatalf("rewrap-keys with master_key among the previous keys: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "rewrap-keys", "--ns", "Not A Namespace"); code != 2 {
		t.Fatalf("rewrap-keys --ns with a bad name: exit %d: %s", code, stderr)
	}
}
