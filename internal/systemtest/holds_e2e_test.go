package systemtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Legal holds and crypto-shredding through the real binary and server.
func TestCLIHoldsAndDestroyKey(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(cfg, []byte("namespaces:\n  vault:\n    encryption: aes-256-gcm\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// No master key: serve refuses, naming the setting.
	t.Setenv("CLAIMCHECK_MASTER_KEY", "")
	_, stderr, code := run(t, bin, nil, "serve", "--config", cfg, "--data", dir, "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "CLAIMCHECK_MASTER_KEY") || !strings.Contains(stderr, "namespaces.vault") {
		t.Fatalf("serve without a master key: exit %d: %s", code, stderr)
	}

	t.Setenv("CLAIMCHECK_MASTER_KEY", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32)))
	server := "--server=" + startServer(t, bin, dir, "--config", cfg, "--data", dir)
	in := filepath.Join(dir, "photos.json")
	if err := os.WriteFile(in, photosJSON(200<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	refJSON, stderr, code := run(t, bin, nil, "put", server, "--ns", "vault", in)
	if code != 0 {
		t.Fatalf("put: exit %d: %s", code, stderr)
	}
	ref := strings.TrimSpace(refJSON)

	if _, stderr, code := run(t, bin, nil, "hold", "set", server, ref, "--reason", "case 42"); code != 0 {
		t.Fatalf("hold set: exit %d: %s", code, stderr)
	}
	stdout, _, _ := run(t, bin, nil, "stat", server, ref)
	if !strings.Contains(stdout, `"holds"`) || !strings.Contains(stdout, "case 42") {
		t.Fatalf("stat does not show the hold:\n%s", stdout)
	}
	if _, stderr, code := run(t, bin, nil, "rm", server, ref); code != 1 || !strings.Contains(stderr, "held") {
		t.Fatalf("rm of a held claim: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "destroy-key", server, "vault", "--confirm", "vault"); code != 1 || !strings.Contains(stderr, "held") {
		t.Fatalf("destroy-key under a hold: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "hold", "clear", server, ref); code != 0 {
		t.Fatalf("hold clear: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "hold", "set", server, "--ns", "vault", ref); code != 2 {
		t.Fatalf("hold set with both a claim and --ns: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "hold", "set", server, "--ns", "vault", "--reason", "audit"); code != 0 {
		t.Fatalf("hold set --ns: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code := run(t, bin, nil, "hold", "show", server, "--ns", "vault"); code != 0 || !strings.Contains(stdout, "audit") {
		t.Fatalf("hold show: exit %d: %s%s", code, stdout, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "hold", "clear", server, "--ns", "vault"); code != 0 {
		t.Fatalf("hold clear --ns: exit %d: %s", code, stderr)
	}
	// The audit trail has every set and lift, with scope and reason.
	stdout, stderr, code = run(t, bin, nil, "events", server, "--ns", "vault")
	if code != 0 {
		t.Fatalf("events --ns: exit %d: %s", code, stderr)
	}
	var holdEvents []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var e struct{ Kind, Reason, Detail string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("events line %q: %v", line, err)
		}
		if strings.HasPrefix(e.Kind, "hold_") {
			holdEvents = append(holdEvents, e.Kind+"/"+e.Reason+"/"+e.Detail)
		}
	}
	if got, want := strings.Join(holdEvents, " "), "hold_set/claim/case 42 hold_cleared/claim/case 42 hold_set/namespace/audit hold_cleared/namespace/audit"; got != want {
		t.Fatalf("hold events of vault: %q, want %q", got, want)
	}

	if _, stderr, code := run(t, bin, nil, "destroy-key", server, "vault"); code != 2 || !strings.Contains(stderr, "--confirm") {
		t.Fatalf("destroy-key without --confirm: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "destroy-key", server, "vault", "--confirm", "vault"); code != 0 {
		t.Fatalf("destroy-key: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "get", server, ref); code != 4 || !strings.Contains(stderr, "key_destroyed") {
		t.Fatalf("get after shredding: exit %d: %s", code, stderr)
	}
}
