package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

// Master key rotation (rewrap.go, ADR 0075) on the real store: SQLite and
// files in a temporary directory, reopened with each step's config as an
// operator would redeploy it.

var thirdMasterKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{11}, 32))

func masterID(t *testing.T, key string) string {
	t.Helper()
	b, err := engine.ParseMasterKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return engine.MasterKeyID(b)
}

// rotation opens stores on one data directory with the master keys each
// step configures.
type rotation struct {
	t     *testing.T
	dir   string
	clock *clock.Fake
}

func newRotation(t *testing.T) *rotation {
	return &rotation{t: t, dir: t.TempDir(), clock: clock.NewFake(t0)}
}

// open opens a store whose defaults encrypt every namespace, with master
// key master and previous keys prev. The store is closed at the end of
// the test.
func (r *rotation) open(master string, prev ...string) *bundle {
	r.t.Helper()
	s, err := r.openErr(master, prev...)
	if err != nil {
		r.t.Fatal(err)
	}
	return &bundle{store: s, clock: r.clock, dir: r.dir}
}

func (r *rotation) openErr(master string, prev ...string) (*engine.Store, error) {
	cfg := engine.Config{Data: r.dir, Clock: r.clock, MasterKey: master, PreviousMasterKeys: prev,
		Defaults: engine.Defaults{Policy: claimcheck.Policy{Encryption: claimcheck.EncryptionAES256GCM}}}
	cfg.Sweeper.Disabled = true
	s, err := engine.Open(context.Background(), cfg)
	if err == nil {
		r.t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// snapshot reads every object file: a rewrap must leave them all as they
// are.
func (b *bundle) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range b.objects(t) {
		raw, err := os.ReadFile(b.dir + "/blobs/" + k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = string(raw)
	}
	return out
}

func (b *bundle) wantRedeem(t *testing.T, ref claimcheck.Ref, data []byte) {
	t.Helper()
	got, err := b.redeem(t, ref)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem %s/%s: %v (%d bytes, want %d)", ref.Namespace, ref.ID, err, len(got), len(data))
	}
}

func (b *bundle) rewrap(t *testing.T, opt claimcheck.RewrapOptions) claimcheck.RewrapReport {
	t.Helper()
	rep, err := b.store.RewrapDataKeys(claimcheck.WithActor(context.Background(), "operator"), opt)
	if err != nil {
		t.Fatalf("RewrapDataKeys(%+v): %v", opt, err)
	}
	return rep
}

func wantReport(t *testing.T, what string, rep claimcheck.RewrapReport, rewrapped, current, failed int, byMaster map[string]int) {
	t.Helper()
	if rep.Rewrapped != rewrapped || rep.AlreadyCurrent != current || rep.Failed != failed || rep.Destroyed != 0 || !maps.Equal(rep.ByMasterKey, byMaster) {
		t.Fatalf("%s: report %+v; want rewrapped %d, already current %d, failed %d, by master key %v",
			what, rep, rewrapped, current, failed, byMaster)
	}
}

func TestMasterKeyRotation(t *testing.T) {
	ctx := context.Background()
	r := newRotation(t)
	a, b := masterID(t, testMasterKey), masterID(t, otherMasterKey)

	// Before: everything under master key A.
	s := r.open(testMasterKey)
	data := map[string][]byte{"orders": randomBytes(t, 100_000), "invoices": jsonDoc(300 << 10)}
	refs := map[string]claimcheck.Ref{}
	for ns, d := range data {
		refs[ns] = s.put(t, ns, d)
	}
	s.store.Close()

	// Step 1: B is the master key, A previous. Old payloads redeem, new
	// data keys are wrapped by B.
	s = r.open(otherMasterKey, testMasterKey)
	for ns, ref := range refs {
		s.wantRedeem(t, ref, data[ns])
	}
	data["fresh"] = randomBytes(t, 5000)
	refs["fresh"] = s.put(t, "fresh", data["fresh"])
	before := s.snapshot(t)

	// The dry run reports and changes nothing.
	rep := s.rewrap(t, claimcheck.RewrapOptions{DryRun: true})
	wantReport(t, "dry run", rep, 2, 1, 0, map[string]int{a: 2, b: 1})
	if !rep.DryRun || rep.MasterKeyID != b || rep.Pending() != 2 {
		t.Fatalf("dry run: %+v", rep)
	}
	if again := s.rewrap(t, claimcheck.RewrapOptions{DryRun: true}); again.Rewrapped != 2 {
		t.Fatalf("a dry run changed keys: the next one reports %+v", again)
	}

	// Step 2: rewrap. Only the wrapped keys change: every object stays
	// byte for byte.
	rep = s.rewrap(t, claimcheck.RewrapOptions{})
	wantReport(t, "rewrap", rep, 2, 1, 0, map[string]int{b: 3})
	if rep.Pending() != 0 {
		t.Fatalf("pending after a rewrap: %d", rep.Pending())
	}
	if after := s.snapshot(t); !maps.Equal(before, after) {
		t.Fatal("the rewrap changed objects in the bucket")
	}
	for ns, ref := range refs {
		s.wantRedeem(t, ref, data[ns])
	}
	// The audit trail: one event per rewrapped namespace, by the actor.
	for ns, want := range map[string]int{"orders": 1, "invoices": 1, "fresh": 0} {
		es, err := s.store.NamespaceEvents(ctx, ns, claimcheck.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range es {
			if e.Kind == "data_key_rewrapped" {
				n++
				if e.Actor != "operator" || !strings.Contains(e.Detail, a) || !strings.Contains(e.Detail, b) {
					t.Errorf("event %+v: want actor operator and both master key ids", e)
				}
			}
		}
		if n != want {
			t.Errorf("namespace %s: %d data_key_rewrapped events, want %d", ns, n, want)
		}
	}
	// Running it again finds nothing to do.
	wantReport(t, "second rewrap", s.rewrap(t, claimcheck.RewrapOptions{}), 0, 3, 0, map[string]int{b: 3})
	s.store.Close()

	// Step 3: A is dropped from the config; everything still redeems, and
	// puts go on under the same data keys.
	s = r.open(otherMasterKey)
	for ns, ref := range refs {
		s.wantRedeem(t, ref, data[ns])
	}
	more := s.put(t, "orders", data["fresh"])
	s.wantRedeem(t, more, data["fresh"])
	s.store.Close()

	// Going back to A alone: a clear error naming both master keys.
	s = r.open(testMasterKey)
	_, err := s.redeem(t, refs["orders"])
	if !errors.Is(err, claimcheck.ErrUnavailable) || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) || !strings.Contains(err.Error(), "previous_master_keys") {
		t.Fatalf("redeem with only the old master key: %v; want ErrUnavailable naming %s and %s", err, a, b)
	}
}

// TestRewrapUnknownMasterKey: a data key wrapped by a master key the
// config does not have is a clear error on redeem and a reported failure
// of the rewrap, which still rewraps the others.
func TestRewrapUnknownMasterKey(t *testing.T) {
	r := newRotation(t)
	s := r.open(thirdMasterKey)
	lost := s.put(t, "lost", randomBytes(t, 2000))
	s.store.Close()
	s = r.open(testMasterKey)
	data := randomBytes(t, 2000)
	kept := s.put(t, "kept", data)
	s.store.Close()

	var logs bytes.Buffer
	cfg := engine.Config{Data: r.dir, Clock: r.clock, MasterKey: otherMasterKey, PreviousMasterKeys: []string{testMasterKey},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	cfg.Sweeper.Disabled = true
	st := enginetest.Open(t, cfg)
	s = &bundle{store: st, clock: r.clock, dir: r.dir}
	a, b, c := masterID(t, testMasterKey), masterID(t, otherMasterKey), masterID(t, thirdMasterKey)
	// Open warns about the namespace it cannot serve.
	if !strings.Contains(logs.String(), "not configured") || !strings.Contains(logs.String(), c) || !strings.Contains(logs.String(), "lost") {
		t.Fatalf("no warning at start about master key %s: %s", c, logs.String())
	}

	_, err := s.redeem(t, lost)
	for _, want := range []string{c, b, a} {
		if !errors.Is(err, claimcheck.ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Fatalf("redeem under an unknown master key: %v; want ErrUnavailable naming %s", err, want)
		}
	}
	rep := s.rewrap(t, claimcheck.RewrapOptions{})
	wantReport(t, "rewrap", rep, 1, 0, 1, map[string]int{b: 1, c: 1})
	if len(rep.Failures) != 1 || rep.Failures[0].Namespace != "lost" || rep.Failures[0].MasterKeyID != c || !strings.Contains(rep.Failures[0].Error, c) {
		t.Fatalf("failures: %+v", rep.Failures)
	}
	s.wantRedeem(t, kept, data)
}

// TestRewrapConcurrent: two stores on one database (two replicas), two
// runs each, all at once: every key is rewrapped exactly once in total,
// each run accounts for every key, and everything redeems with the new
// master key alone.
func TestRewrapConcurrent(t *testing.T) {
	r := newRotation(t)
	s := r.open(testMasterKey)
	const n = 12
	data := map[string][]byte{}
	refs := map[string]claimcheck.Ref{}
	for i := range n {
		ns := fmt.Sprintf("ns%02d", i)
		data[ns] = randomBytes(t, 1000+i)
		refs[ns] = s.put(t, ns, data[ns])
	}
	s.store.Close()

	replicas := []*bundle{r.open(otherMasterKey, testMasterKey), r.open(otherMasterKey, testMasterKey)}
	var mu sync.Mutex
	var reps []claimcheck.RewrapReport
	var wg sync.WaitGroup
	for _, rep := range []*bundle{replicas[0], replicas[0], replicas[1], replicas[1]} {
		wg.Go(func() {
			got, err := rep.store.RewrapDataKeys(context.Background(), claimcheck.RewrapOptions{})
			if err != nil {
				t.Errorf("RewrapDataKeys: %v", err)
				return
			}
			mu.Lock()
			reps = append(reps, got)
			mu.Unlock()
		})
	}
	wg.Wait()
	total := 0
	for _, rep := range reps {
		if rep.Rewrapped+rep.AlreadyCurrent != n || rep.Failed != 0 || rep.Destroyed != 0 {
			t.Errorf("a run accounted for its keys as %+v, want %d in all", rep, n)
		}
		total += rep.Rewrapped
	}
	if total != n {
		t.Fatalf("the concurrent runs rewrapped %d keys in total, want %d", total, n)
	}
	for _, s := range replicas {
		s.store.Close()
	}
	s = r.open(otherMasterKey)
	wantReport(t, "after", s.rewrap(t, claimcheck.RewrapOptions{DryRun: true}), 0, n, 0, map[string]int{masterID(t, otherMasterKey): n})
	for ns, ref := range refs {
		s.wantRedeem(t, ref, data[ns])
		es, err := s.store.NamespaceEvents(context.Background(), ns, claimcheck.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, e := range es {
			if e.Kind == "data_key_rewrapped" {
				k++
			}
		}
		if k != 1 {
			t.Errorf("namespace %s: %d data_key_rewrapped events, want 1", ns, k)
		}
	}
}

// TestRewrapLeavesDestroyedKeys: a shredded namespace stays shredded
// through a rotation; the tombstone is neither listed nor changed.
func TestRewrapLeavesDestroyedKeys(t *testing.T) {
	ctx := claimcheck.WithActor(context.Background(), "admin")
	r := newRotation(t)
	s := r.open(testMasterKey)
	shredded := s.put(t, "shredded", randomBytes(t, 4000))
	data := randomBytes(t, 4000)
	alive := s.put(t, "alive", data)
	if err := s.store.DestroyNamespaceKey(ctx, "shredded"); err != nil {
		t.Fatal(err)
	}
	es, err := s.store.NamespaceEvents(ctx, "shredded", claimcheck.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var destroyed []string
	for _, e := range es {
		if e.Kind == "data_key_destroyed" {
			destroyed = append(destroyed, e.Actor+" "+e.Detail)
		}
	}
	if len(destroyed) != 1 || !strings.HasPrefix(destroyed[0], "admin key dk_") {
		t.Fatalf("data_key_destroyed events: %q, want one by admin naming the key", destroyed)
	}
	s.store.Close()

	s = r.open(otherMasterKey, testMasterKey)
	wantReport(t, "rewrap", s.rewrap(t, claimcheck.RewrapOptions{}), 1, 0, 0, map[string]int{masterID(t, otherMasterKey): 1})
	wantReport(t, "rewrap of the shredded namespace", s.rewrap(t, claimcheck.RewrapOptions{Namespace: "shredded"}), 0, 0, 0, map[string]int{})
	s.store.Close()
	s = r.open(otherMasterKey)
	_, err = s.redeem(t, shredded)
	wantGone(t, err, claimcheck.ReasonKeyDestroyed)
	s.wantRedeem(t, alive, data)
}

func TestPreviousMasterKeysConfig(t *testing.T) {
	r := newRotation(t)
	bad := base64.StdEncoding.EncodeToString(make([]byte, 16))
	for _, tc := range []struct {
		name, master string
		prev         []string
		want         string
	}{
		{"previous without master", "", []string{testMasterKey}, "previous_master_keys: set without master_key"},
		{"previous equals master", testMasterKey, []string{otherMasterKey, testMasterKey}, "previous_master_keys[1]: the same key as master_key"},
		{"duplicate previous", testMasterKey, []string{otherMasterKey, otherMasterKey}, "previous_master_keys[1]: the same key as previous_master_keys[0]"},
		{"short previous", testMasterKey, []string{otherMasterKey, bad}, "previous_master_keys[1]: 16 bytes, want 32"},
		{"not base64", testMasterKey, []string{"nope!"}, "previous_master_keys[0]: not base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.openErr(tc.master, tc.prev...)
			if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("open: %v; want invalid argument %q", err, tc.want)
			}
		})
	}
	// Without a master key there is nothing to rewrap with.
	cfg := engine.Config{Data: t.TempDir(), Clock: r.clock}
	cfg.Sweeper.Disabled = true
	s := enginetest.Open(t, cfg)
	if _, err := s.RewrapDataKeys(context.Background(), claimcheck.RewrapOptions{}); !errors.Is(err, claimcheck.ErrUnavailable) || !strings.Contains(err.Error(), "master_key") {
		t.Fatalf("rewrap without a master key: %v", err)
	}
}

// TestPreviousMasterKeysYAML: a list in the file, or one comma-separated
// string (the environment's form, CLAIMCHECK_PREVIOUS_MASTER_KEYS).
func TestPreviousMasterKeysYAML(t *testing.T) {
	for src, want := range map[string][]string{
		"previous_master_keys: [k1, k2]":        {"k1", "k2"},
		"previous_master_keys:\n  - k1\n  - k2": {"k1", "k2"},
		"previous_master_keys: k1, k2":          {"k1", "k2"},
		"previous_master_keys: ' k1 ,,k2, '":    {"k1", "k2"},
		"previous_master_keys: ''":              nil,
		"previous_master_keys:":                 nil,
	} {
		var c engine.Config
		if err := yaml.Unmarshal([]byte(src), &c); err != nil || !slices.Equal(c.PreviousMasterKeys, want) {
			t.Errorf("%q: %q, %v; want %q", src, c.PreviousMasterKeys, err, want)
		}
	}
	var c engine.Config
	if err := yaml.Unmarshal([]byte("previous_master_keys: {a: b}"), &c); err == nil || !strings.Contains(err.Error(), "previous_master_keys") {
		t.Errorf("a mapping: %v; want an error naming previous_master_keys", err)
	}
}
