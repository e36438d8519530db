package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/claimstest"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/internal/testkit/claimsharness"
)

// driverBucket makes a directory bucket holding objects as Temporal's
// stock drivers write them (two of one workflow run) and returns its
// file:// URL and the store over it.
func driverBucket(t *testing.T, extra map[string][]byte) (string, blob.Store) {
	t.Helper()
	url := "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "temporal-payloads"))
	s, err := blob.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	objs := map[string][]byte{}
	for i, text := range []string{`"the input"`, `"the activity's result"`} {
		data, err := proto.Marshal(&commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(text)})
		if err != nil {
			t.Fatal(err)
		}
		run := []string{"null", "run-1"}[i]
		objs["v0/ns/default/wt/Order/wi/order-1/ri/"+run+"/d/sha256/"+hexSum(data)] = data
	}
	for k, v := range extra {
		objs[k] = v
	}
	for key, data := range objs {
		w, err := s.NewWriter(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(data)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return url, s
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func keys(t *testing.T, s blob.Store) []string {
	t.Helper()
	objs, _, err := s.List(context.Background(), "v0/", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

// guideBlock returns the command lines of docs/MIGRATING.md's block that
// names this test, comments stripped.
func guideBlock(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "MIGRATING.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "TestMigratingGuideAdoptSteps")
	if !ok {
		t.Fatal("docs/MIGRATING.md has no block run by TestMigratingGuideAdoptSteps")
	}
	_, after, _ = strings.Cut(after, "\n")
	block, _, _ := strings.Cut(after, "```")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestMigratingGuideAdoptSteps runs the guide's adopt commands as written
// against a claimcheck server: the dry run changes nothing, the run with
// --keep-source adopts every object and deletes none, the last one adopts
// nothing twice and deletes the sources.
func TestMigratingGuideAdoptSteps(t *testing.T) {
	env := claimsharness.Open(t, claimsharness.Files, claimstest.Options{Namespaces: map[string]claimcheck.Policy{"temporal": {}}})
	url, bucket := driverBucket(t, nil)
	t.Setenv("CLAIMCHECK_SERVER", env.URL)
	t.Setenv("CLAIMCHECK_API_KEY", "")
	vars := map[string]string{"DRIVER_BUCKET_URL": url}
	lines := guideBlock(t)
	if len(lines) != 3 {
		t.Fatalf("the guide's adopt block has %d commands, this test checks 3: %q", len(lines), lines)
	}
	claims := func() int {
		page, err := env.Store.List(context.Background(), "temporal", claimcheck.ListOptions{
			Labels: map[string]string{cctemporal.LabelWorkflowID: "order-1"}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Claims)
	}
	want := []struct {
		summary      string
		claims, left int
	}{
		{"dry run (nothing changed; --apply to adopt): 2 objects listed, adopted 2, sources deleted 0", 0, 2},
		{"applied: 2 objects listed, adopted 2, sources deleted 0", 2, 2},
		{"applied: 2 objects listed, already-adopted 2, sources deleted 2", 2, 0},
	}
	for i, line := range lines {
		words := strings.Fields(os.Expand(line, func(k string) string { return vars[k] }))
		if words[0] != "claimcheck-temporal-adopt" {
			t.Fatalf("guide line %q does not run claimcheck-temporal-adopt", line)
		}
		for j, w := range words {
			words[j] = strings.Trim(w, `"`)
		}
		var out bytes.Buffer
		if err := run(context.Background(), words[1:], &out); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out.String())
		}
		if !strings.Contains(out.String(), want[i].summary) || claims() != want[i].claims || len(keys(t, bucket)) != want[i].left {
			t.Fatalf("%s:\n%s\nclaims %d, objects left %d; want %q, %d claims, %d objects left",
				line, out.String(), claims(), len(keys(t, bucket)), want[i].summary, want[i].claims, want[i].left)
		}
	}
}

// An object whose bytes fail the hash in its key is refused, named with
// both hashes, never deleted, and the exit status says so.
func TestAdoptRefusalExitsNonZero(t *testing.T) {
	env := claimsharness.Open(t, claimsharness.Files, claimstest.Options{Namespaces: map[string]claimcheck.Policy{"temporal": {}}})
	bad := "v0/ns/default/wt/Order/wi/order-2/ri/run-2/d/sha256/" + hexSum([]byte("expected"))
	url, bucket := driverBucket(t, map[string][]byte{bad: []byte("stored")})
	var out bytes.Buffer
	err := run(context.Background(), []string{"--server", env.URL, "--source", url, "--apply"}, &out)
	if !errors.Is(err, errRefused) {
		t.Fatalf("exit: %v, want the refusal\n%s", err, out.String())
	}
	for _, w := range []string{"refused", bad, hexSum([]byte("stored")), hexSum([]byte("expected"))} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output does not name %q:\n%s", w, out.String())
		}
	}
	if !strings.Contains(strings.Join(keys(t, bucket), " "), bad) {
		t.Fatal("the refused object was deleted")
	}
	if err := run(context.Background(), []string{"--server", env.URL, "--source", "file:///"}, &out); err == nil || !strings.Contains(err.Error(), "--source") {
		t.Fatalf("a source naming no bucket: %v", err)
	}
}
