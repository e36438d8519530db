package systemtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// claimcheck ls and claimcheck extend through the real binary and server.
func TestCLIListAndExtend(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(cfg, []byte("namespaces:\n  wf:\n    ttl:\n      max_age: 1h\n      max_lifetime: 48h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	server := "--server=" + startServer(t, bin, dir, "--config", cfg, "--data", dir)
	in := filepath.Join(dir, "photos.json")
	var refs []string
	for i := range 3 {
		if err := os.WriteFile(in, photosJSON(10<<10+i), 0o600); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := run(t, bin, nil, "put", server, "--ns", "wf", "--label", "run="+[]string{"a", "b", "a"}[i], in)
		if code != 0 {
			t.Fatalf("put: exit %d: %s", code, stderr)
		}
		refs = append(refs, strings.TrimSpace(out))
	}
	stdout, stderr, code := run(t, bin, nil, "ls", server, "wf", "-l", "run=a", "--json", "--page", "1")
	if code != 0 {
		t.Fatalf("ls: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("ls -l run=a: %d lines, want 2:\n%s", len(lines), stdout)
	}
	for _, l := range lines {
		var ci claimcheck.ClaimInfo
		if err := json.Unmarshal([]byte(l), &ci); err != nil || ci.Labels["run"] != "a" {
			t.Fatalf("ls line %q: %v", l, err)
		}
	}
	// Rows are counted by the id at the start of a line: an id's random
	// part may itself contain "cc_".
	if stdout, _, code := run(t, bin, nil, "ls", server, "wf"); code != 0 || strings.Count(stdout, "\ncc_") != 3 || !strings.HasPrefix(stdout, "ID") {
		t.Fatalf("ls table: exit %d:\n%s", code, stdout)
	}
	// One page by default; stderr says how to go on, and the cursor
	// resumes right after the last claim printed.
	stdout, stderr, code = run(t, bin, nil, "ls", server, "wf", "--limit", "2", "--json")
	_, cursor, found := strings.Cut(strings.TrimSpace(stderr), "--cursor ")
	cursor, _, _ = strings.Cut(cursor, " ")
	if code != 0 || strings.Count(stdout, "\n") != 2 || !found || cursor == "" {
		t.Fatalf("ls --limit 2: exit %d, want 2 claims and a cursor on stderr:\n%s%s", code, stdout, stderr)
	}
	rest, stderr, code := run(t, bin, nil, "ls", server, "wf", "--cursor", cursor, "--json")
	if code != 0 || strings.Count(rest, "\n") != 1 || stderr != "" || strings.Contains(stdout, strings.TrimSpace(rest)) {
		t.Fatalf("ls --cursor: exit %d, want the third claim only:\n%s%s", code, rest, stderr)
	}
	if stdout, _, code := run(t, bin, nil, "ls", server, "wf", "--all", "--page", "1"); code != 0 || strings.Count(stdout, "\ncc_") != 3 {
		t.Fatalf("ls --all: exit %d:\n%s", code, stdout)
	}
	if _, stderr, code := run(t, bin, nil, "ls", server, "wf", "--all", "--limit", "5"); code != 2 || !strings.Contains(stderr, "--all and --limit") {
		t.Fatalf("ls --all --limit: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "ls", server, "wf", "--cursor", "garbage"); code == 0 || !strings.Contains(stderr, "cursor") {
		t.Fatalf("ls --cursor garbage: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "ls", server, "wf", "-l", "run"); code != 2 || !strings.Contains(stderr, "--label") {
		t.Fatalf("ls -l run: exit %d: %s", code, stderr)
	}

	ref, err := claimcheck.ParseRef([]byte(refs[0]))
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = run(t, bin, nil, "extend", server, refs[0], "--by", "24h")
	if code != 0 {
		t.Fatalf("extend --by 24h: exit %d: %s", code, stderr)
	}
	var info claimcheck.ClaimInfo
	if err := json.Unmarshal([]byte(stdout), &info); err != nil || !info.Ref.ExpiresAt.Equal(ref.ExpiresAt.Add(24*time.Hour)) {
		t.Fatalf("extend answered %s (%v), want expiry %v", stdout, err, ref.ExpiresAt.Add(24*time.Hour))
	}
	if _, stderr, code := run(t, bin, nil, "extend", server, refs[0], "--by", "48h"); code != 1 || !strings.Contains(stderr, "ttl.max_lifetime 48h0m0s") {
		t.Fatalf("extend past max_lifetime: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, bin, nil, "extend", server, refs[0]); code != 2 {
		t.Fatalf("extend without --by or --until: exit %d: %s", code, stderr)
	}
}
