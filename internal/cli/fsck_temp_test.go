package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/cli"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/sweep"
)

// TestFsckTempFilesOfDeadWrites: a temp file of a write (what a put
// killed mid-body leaves under the file store) is debris once no put can
// still be writing it: untouched for twice the server's read timeout on
// request bodies, not the backstop's hour. fsck names it, gc deletes it;
// a younger temp file, and an unknown object younger than the backstop's
// grace, are left alone.
func TestFsckTempFilesOfDeadWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := enginetest.Open(t, engine.Config{Data: dir, Sweeper: sweep.Config{Disabled: true}})
	if _, err := store.Put(ctx, "orders", strings.NewReader("a payload"), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	config := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(config, []byte("http:\n  read_timeout: 30s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]time.Duration{
		"b_deadwrite.123456.tmp":   -90 * time.Second, // older than 2 × 30s: dead
		"b_livewrite.654321.tmp":   -20 * time.Second, // a put pausing: alive
		"b_unknownobject-no-row-x": -90 * time.Second, // not a temp file: the hour applies
	}
	for name, age := range files {
		p := filepath.Join(dir, "blobs", "orders", name)
		if err := os.WriteFile(p, []byte("partial bytes"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}

	out, errOut, code := runMain(t, "fsck", "--config", config, "--data", dir)
	if code != cli.ExitError || !strings.Contains(out, "debris: 1 objects") || !strings.Contains(out, "orders/b_deadwrite.123456.tmp") {
		t.Fatalf("fsck = %d, want exit 1 naming the dead write's temp file only\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runMain(t, "gc", "--config", config, "--data", dir); code != 0 {
		t.Fatalf("gc = %d\n%s%s", code, out, errOut)
	}
	for name := range files {
		_, err := os.Stat(filepath.Join(dir, "blobs", "orders", name))
		if gone := os.IsNotExist(err); gone != (name == "b_deadwrite.123456.tmp") {
			t.Errorf("after gc, %s gone = %v (%v)", name, gone, err)
		}
	}
	// With the default read timeout (1m), the same 90 seconds is young.
	at := time.Now().Add(-90 * time.Second)
	p := filepath.Join(dir, "blobs", "orders", "b_deadwrite.123456.tmp")
	if err := os.WriteFile(p, []byte("partial bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runMain(t, "fsck", "--data", dir); code != 0 || !strings.Contains(out, "debris: 0 objects") {
		t.Fatalf("fsck with the default read timeout = %d, want no debris\n%s%s", code, out, errOut)
	}
}
