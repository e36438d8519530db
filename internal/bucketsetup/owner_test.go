package bucketsetup_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/lifecyclesim"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// storage is one backend for the ownership scenario: the engine config
// fields that point at it, and a store of its own to look at it.
type storage struct {
	set   func(*engine.Config)
	check blob.Store
	// debris: the backend's object times follow the clock the stores run
	// on, so the backstop's grace can be tested.
	debris bool
}

// TestStorageOwnership runs two stores (two metadata stores) on one
// storage: the second refuses to start, naming both, until told it
// shares on purpose; then each keeps the other's lifecycle rules through
// its own start-up set-up (what gc and serve run), neither collects the
// other's objects as debris, and the owner marker is never debris.
func TestStorageOwnership(t *testing.T) {
	t.Run("Sim", func(t *testing.T) {
		sim := lifecyclesim.New(t, clock.NewFake(t0))
		runOwnership(t, storage{set: func(c *engine.Config) { c.BlobStore = sim; c.Clock = sim.Clock }, check: sim})
	})
	t.Run("Files", func(t *testing.T) {
		dir := t.TempDir()
		url := "file://" + dir
		check, err := blob.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = check.Close() })
		runOwnership(t, storage{set: func(c *engine.Config) { c.Storage = url }, check: check, debris: true})
	})
	t.Run("MinIO", func(t *testing.T) {
		url, _, _ := testsvc.S3(t)
		check, err := blob.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = check.Close() })
		runOwnership(t, storage{set: func(c *engine.Config) { c.Storage = url }, check: check, debris: true})
	})
}

func runOwnership(t *testing.T, st storage) {
	ctx := context.Background()
	dirA, dirB := t.TempDir(), t.TempDir()
	open := func(data, ns string, shared bool) (*engine.Store, error) {
		cfg := engine.Config{
			Data: data, StorageShared: shared, Lifecycle: engine.LifecycleManage,
			Defaults:   engine.Defaults{Disabled: true},
			Namespaces: map[string]claimcheck.Policy{ns: {TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(24 * time.Hour)}}},
			Sweeper:    sweep.Config{Disabled: true, BackstopGrace: time.Nanosecond},
		}
		st.set(&cfg)
		s, err := engine.Open(ctx, cfg)
		if err == nil {
			t.Cleanup(func() { _ = s.Close() })
		}
		return s, err
	}
	a, err := open(dirA, "alpha", false)
	if err != nil {
		t.Fatal(err)
	}

	// A second store on the same storage refuses, naming both stores
	// and the key that allows it.
	_, err = open(dirB, "beta", false)
	if err == nil {
		t.Fatal("a second store opened on storage another store owns")
	}
	for _, want := range []string{filepath.Join(dirA, "claimcheck.db"), filepath.Join(dirB, "claimcheck.db"), "storage_shared: true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
	// A replica of the owner (same metadata store) is the same store.
	if _, err := open(dirA, "alpha", false); err != nil {
		t.Fatalf("a second replica of the owner: %v", err)
	}

	b, err := open(dirB, "beta", true)
	if err != nil {
		t.Fatalf("shared on purpose: %v", err)
	}
	ruleOf := func(ns string) []blob.LifecycleRule {
		t.Helper()
		lc := blob.AbilitiesOf(st.check).Lifecycler
		if lc == nil {
			t.Fatal("storage without lifecycle rules")
		}
		rules, err := lc.LifecycleRules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []blob.LifecycleRule
		for _, r := range rules {
			if strings.HasPrefix(r.ID, "claimcheck:") && strings.HasSuffix(r.ID, ":ns:"+ns) {
				out = append(out, r)
			}
		}
		return out
	}
	if blob.AbilitiesOf(st.check).Lifecycler != nil {
		// Each start-up set-up (the owner's again, as gc runs it) keeps
		// the other store's rule.
		if _, err := open(dirA, "alpha", false); err != nil {
			t.Fatal(err)
		}
		if ra, rb := ruleOf("alpha"), ruleOf("beta"); len(ra) != 1 || len(rb) != 1 || ra[0].ID[:28] == rb[0].ID[:28] {
			t.Fatalf("rules alpha %+v, beta %+v: want one of each, with different store ids", ra, rb)
		}
	}

	if !st.debris {
		return
	}
	// Each store's objects have no row in the other's metadata; while
	// the storage is shared, neither backstop collects them.
	data := bytes.Repeat([]byte("o"), 2000)
	refA, err := a.Put(ctx, "alpha", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refB, err := b.Put(ctx, "beta", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // past the 1ns grace on any clock resolution
	for _, s := range []*engine.Store{a, b} {
		res, err := s.Sweeper().Backstop().Run(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.DebrisDeleted != 0 {
			t.Errorf("backstop deleted %d objects of a shared storage", res.DebrisDeleted)
		}
	}
	for _, c := range []struct {
		s   *engine.Store
		ref claimcheck.Ref
	}{{a, refA}, {b, refB}} {
		p, err := c.s.Redeem(ctx, c.ref)
		if err != nil {
			t.Fatalf("after both backstops: %v", err)
		}
		if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after both backstops: %d bytes, %v", len(got), err)
		}
	}

	// The sharer gone (its marker removed by the operator), the owner
	// collects what has no row, except its marker.
	objs, _, err := st.check.List(ctx, blob.OwnerKey+".", "", 10)
	if err != nil || len(objs) != 1 {
		t.Fatalf("sharer markers %+v, %v: want one", objs, err)
	}
	if err := st.check.Delete(ctx, objs[0].Key); err != nil {
		t.Fatal(err)
	}
	res, err := a.Sweeper().Backstop().Run(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.DebrisDeleted != 1 {
		t.Errorf("debris deleted = %d, want 1 (the other store's object)", res.DebrisDeleted)
	}
	if _, err := st.check.Attributes(ctx, blob.OwnerKey); err != nil {
		t.Errorf("owner marker after the backstop: %v", err)
	}
	rep, err := a.Sweeper().Inspect(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Debris) != 0 {
		t.Errorf("fsck debris %+v, want none (the owner marker is not debris)", rep.Debris)
	}
	p, err := a.Redeem(ctx, refA)
	if err != nil {
		t.Fatalf("owner's claim after the backstop: %v", err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
		t.Errorf("owner's claim after the backstop: %d bytes, %v", len(got), err)
	}
}
