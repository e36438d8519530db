package cli_test

import (
	"context"
	"database/sql"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/cli"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/sweep"
)

// TestOldKeyLayoutKeepsWorking: a store whose objects were written under
// the earlier <namespace>/<blob id> layout (ADR 0261), reopened by this
// version: its claims redeem, dedup shares its objects, a released one's
// object is collected, and fsck and the backstop match every such object
// to its row (no debris, nothing missing) while still finding an
// old-layout object without a row. New puts use the spread layout.
func TestOldKeyLayoutKeepsWorking(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(time.Now().Add(-48 * time.Hour))
	open := func() *engine.Store {
		return enginetest.Open(t, engine.Config{Data: dir, Clock: clk, Sweeper: sweep.Config{Disabled: true}})
	}
	payloads := map[string]string{"kept": "a payload kept across the layouts", "released": "a payload released after the reopen"}
	refs := map[string]claimcheck.Ref{}
	store := open()
	for name, body := range payloads {
		ref, err := store.Put(ctx, "orders", strings.NewReader(body), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refs[name] = ref
	}
	store.Close()

	// Rewrite the store as the earlier layout wrote it: each object at
	// <namespace>/<blob id>[.<data key>], its row (and block table) naming
	// that key. The files are made older than the backstop's grace, so an
	// object the backstop failed to match to its row would be debris.
	db, err := sql.Open("sqlite", filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT namespace, object_key FROM blobs`)
	if err != nil {
		t.Fatal(err)
	}
	moved := map[string]string{}
	for rows.Next() {
		var ns, key string
		if err := rows.Scan(&ns, &key); err != nil {
			t.Fatal(err)
		}
		if strings.Count(key, "/") != 2 {
			t.Fatalf("new object key %q: want <namespace>/<spread>/<blob id>", key)
		}
		moved[key] = ns + "/" + path.Base(key)
	}
	rows.Close()
	old := time.Now().Add(-2 * time.Hour)
	for from, to := range moved {
		for _, q := range []string{`UPDATE blobs SET object_key = ? WHERE object_key = ?`, `UPDATE object_blocks SET object_key = ? WHERE object_key = ?`} {
			if _, err := db.Exec(q, to, from); err != nil {
				t.Fatal(err)
			}
		}
		dst := filepath.Join(dir, "blobs", filepath.FromSlash(to))
		if err := os.Rename(filepath.Join(dir, "blobs", filepath.FromSlash(from)), dst); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dst, old, old); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	debris := filepath.Join(dir, "blobs", "orders", "b_debrisOfTheOldLayout0")
	if err := os.WriteFile(debris, []byte("no row owns this"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(debris, old, old); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runMain(t, "fsck", "--data", dir)
	if code != cli.ExitError || !strings.Contains(out, "debris: 1 objects") || !strings.Contains(out, "orders/b_debrisOfTheOldLayout0") ||
		!strings.Contains(out, "missing objects: 0") || !strings.Contains(out, "wrong object size: 0") {
		t.Fatalf("fsck of the old layout = %d, want the one object without a row as debris and nothing missing\n%s%s", code, out, errOut)
	}
	if err := os.Remove(debris); err != nil {
		t.Fatal(err)
	}

	store = open()
	defer store.Close()
	redeem := func(ref claimcheck.Ref, want string) {
		t.Helper()
		p, err := store.Redeem(ctx, ref)
		if err != nil {
			t.Fatalf("redeem %s: %v", ref, err)
		}
		got, err := p.Bytes()
		p.Close()
		if err != nil || string(got) != want {
			t.Fatalf("redeem %s = %q, %v; want %q", ref, got, err, want)
		}
	}
	for name, body := range payloads {
		redeem(refs[name], body)
	}
	// Dedup shares the old-layout object with a new claim of its content.
	again, err := store.Put(ctx, "orders", strings.NewReader(payloads["kept"]), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	redeem(again, payloads["kept"])
	fresh, err := store.Put(ctx, "orders", strings.NewReader("a payload of the new layout"), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := store.Stat(ctx, fresh); err != nil || strings.Count(info.Object, "/") != 2 || !strings.HasPrefix(info.Object, "orders/") {
		t.Fatalf("a new put's object %q (%v): want orders/<spread>/<blob id>", info.Object, err)
	}

	// The released claim's old-layout object is collected.
	releasedKey := ""
	for _, to := range moved {
		if info, err := store.Stat(ctx, refs["released"]); err == nil && info.Object == to {
			releasedKey = to
		}
	}
	if releasedKey == "" {
		t.Fatal("the released claim's object is not one of the old-layout keys")
	}
	if err := store.Delete(ctx, refs["released"]); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour) // past the grace period
	if res, err := store.SweepOnce(ctx, 0); err != nil || res.BlobsCollected != 1 {
		t.Fatalf("sweep: %+v, %v; want the released blob collected", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", filepath.FromSlash(releasedKey))); !os.IsNotExist(err) {
		t.Fatalf("the collected old-layout object %s is still there (%v)", releasedKey, err)
	}
	redeem(refs["kept"], payloads["kept"])
	store.Close()

	// Old and new layouts side by side: the backstop matches both to
	// their rows, and finds an object without a row under a spread
	// directory as it does at the namespace's top.
	newDebris := filepath.Join(dir, "blobs", "orders", "ab", "b_debrisOfTheNewLayout0")
	if err := os.MkdirAll(filepath.Dir(newDebris), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newDebris, []byte("no row owns this either"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(newDebris, old, old); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runMain(t, "fsck", "--data", dir)
	if code != cli.ExitError || !strings.Contains(out, "debris: 1 objects") || !strings.Contains(out, "orders/ab/b_debrisOfTheNewLayout0") ||
		!strings.Contains(out, "missing objects: 0") {
		t.Fatalf("fsck of both layouts = %d, want the one new-layout object without a row as debris, nothing missing\n%s%s", code, out, errOut)
	}
}
