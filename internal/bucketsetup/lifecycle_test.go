package bucketsetup_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/lifecyclesim"
	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
	"github.com/claimcheck/claimcheck/sweep"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestLifecycleNeverExpiresLiveClaims runs puts of a few recurring
// payloads (so dedup shares old blobs) while time moves on in uneven
// steps, runs the bucket's expiration pass after every step, and checks
// that every claim before its deadline still redeems: the rules and
// DedupNotBefore together never let the bucket delete a live claim's
// object.
func TestLifecycleNeverExpiresLiveClaims(t *testing.T) {
	fc := clock.NewFake(t0)
	sim := lifecyclesim.New(t, fc)
	no := false
	ttl := claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(48 * time.Hour), DeleteAfterRead: &no,
		GracePeriod: claimcheck.Duration(time.Hour), RetentionAfterRead: claimcheck.Duration(time.Minute)}
	s := enginetest.Open(t, engine.Config{
		Clock: fc, BlobStore: sim,
		Namespaces: map[string]claimcheck.Policy{"lc": {TTL: ttl, Compression: claimcheck.CompressionNone}},
		Sweeper:    sweep.Config{Disabled: true},
	})

	// The rules the store wrote: ceil(48h + 1h grace + 1h margin) = 3 days.
	rules, _ := sim.LifecycleRules(context.Background())
	if i := slices.IndexFunc(rules, func(r blob.LifecycleRule) bool { return strings.HasSuffix(r.ID, ":ns:lc") }); i < 0 || rules[i].ExpireDays != 3 || rules[i].Prefix != "lc/" {
		t.Fatalf("rules = %+v, want claimcheck:<store id>:ns:lc on lc/ after 3 days", rules)
	}

	payloads := [][]byte{bytes.Repeat([]byte("a"), 4096), bytes.Repeat([]byte("b"), 4096), bytes.Repeat([]byte("c"), 4096)}
	r := rand.New(rand.NewPCG(7, 7))
	steps := 400
	if testing.Short() {
		steps = 150
	}
	type live struct {
		ref  claimcheck.Ref
		data []byte
	}
	var claims []live
	expired := 0
	for range steps {
		data := payloads[r.IntN(len(payloads))]
		ref, err := s.Put(context.Background(), "lc", bytes.NewReader(data), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		claims = append(claims, live{ref, data})
		fc.Advance(time.Duration(r.IntN(20*60)) * time.Minute)
		// The bucket's pass first, so it races the sweeper for objects
		// that are due for collection.
		expired += len(sim.Expire(t))
		if _, err := s.SweepOnce(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
		now := fc.Now()
		kept := claims[:0]
		for _, c := range claims {
			if !now.Before(c.ref.ExpiresAt) {
				continue // past its deadline: nothing promised
			}
			kept = append(kept, c)
			p, err := s.Redeem(context.Background(), c.ref)
			if err != nil {
				t.Fatalf("at %s: live claim %s (expires %s): %v", now.Sub(t0), c.ref.ID, c.ref.ExpiresAt.Sub(t0), err)
			}
			got, err := p.Bytes()
			if err != nil || !bytes.Equal(got, c.data) {
				t.Fatalf("at %s: live claim %s: %d bytes, %v", now.Sub(t0), c.ref.ID, len(got), err)
			}
		}
		claims = kept
	}
	if expired == 0 {
		t.Fatal("the lifecycle pass never deleted anything: the test did not exercise the rule")
	}
	t.Logf("%d steps, %d objects expired by the simulated lifecycle", steps, expired)
}

// TestLifecycleDrift checks the start-up check against a bucket with a
// stale rule of ours, a drifted one (both written before rule IDs carried
// the store's id, so the store that owns the bucket takes them over) and
// a foreign rule that expires objects too soon: check mode changes
// nothing and counts them all;
// manage mode repairs ours, keeps the foreign rules, counts what it
// cannot repair, and dedup honours the foreign rule.
func TestLifecycleDrift(t *testing.T) {
	foreign := blob.LifecycleRule{ID: "ops:tmp", Prefix: "lc/", ExpireDays: 1}
	unrelated := blob.LifecycleRule{ID: "ops:logs", Prefix: "logs/", ExpireDays: 1}
	start := []blob.LifecycleRule{
		{ID: "claimcheck:ns:old", Prefix: "old/", ExpireDays: 5},
		{ID: "claimcheck:ns:lc", Prefix: "lc/", ExpireDays: 9},
		foreign, unrelated,
	}
	open := func(t *testing.T, mode string, sim *lifecyclesim.Bucket) (*engine.Store, *prometheus.Registry) {
		t.Helper()
		reg := prometheus.NewRegistry()
		s := enginetest.Open(t, engine.Config{
			Clock: sim.Clock, BlobStore: sim, Registerer: reg, Lifecycle: mode,
			Defaults:   engine.Defaults{Disabled: true},
			Namespaces: map[string]claimcheck.Policy{"lc": {TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(24 * time.Hour)}}},
			Sweeper:    sweep.Config{Disabled: true},
		})
		return s, reg
	}
	drift := func(t *testing.T, reg *prometheus.Registry) float64 {
		t.Helper()
		return metrictest.Value(t, reg, "claimcheck_lifecycle_drift_rules")
	}

	t.Run("Check", func(t *testing.T) {
		sim := lifecyclesim.New(t, clock.NewFake(t0), start...)
		_, reg := open(t, engine.LifecycleCheck, sim)
		if puts := sim.Puts(); puts != 0 {
			t.Errorf("check mode wrote the rules %d times", puts)
		}
		// stale old, the unscoped lc, the scoped lc and abort missing,
		// foreign too short.
		if got := drift(t, reg); got != 5 {
			t.Errorf("drift = %v, want 5", got)
		}
	})
	t.Run("Manage", func(t *testing.T) {
		sim := lifecyclesim.New(t, clock.NewFake(t0), start...)
		s, reg := open(t, engine.LifecycleManage, sim)
		rules, _ := sim.LifecycleRules(context.Background())
		ids := map[string]blob.LifecycleRule{}
		for _, r := range rules {
			ids[r.ID] = r
		}
		for _, old := range []string{"claimcheck:ns:old", "claimcheck:ns:lc"} {
			if _, ok := ids[old]; ok {
				t.Errorf("rule %s without a store id kept by the store owning the bucket", old)
			}
		}
		var lc []blob.LifecycleRule
		for id, r := range ids {
			if strings.HasPrefix(id, "claimcheck:") && strings.HasSuffix(id, ":ns:lc") {
				lc = append(lc, r)
			}
		}
		if len(lc) != 1 || lc[0].ExpireDays != 2 {
			t.Errorf("claimcheck:<store id>:ns:lc = %+v, want one, 2 days", lc)
		}
		if ids["ops:tmp"] != foreign || ids["ops:logs"] != unrelated {
			t.Errorf("foreign rules not kept: %+v", rules)
		}
		if got := drift(t, reg); got != 1 {
			t.Errorf("drift after repair = %v, want 1 (the foreign rule)", got)
		}
		// The foreign 1-day rule bounds dedup: a blob written 2 hours
		// ago may be shared by a 24h claim only if 1 day covers it,
		// which it does not, so the second put writes its own blob.
		data := bytes.Repeat([]byte("x"), 10_000)
		r1, err := s.Put(context.Background(), "lc", bytes.NewReader(data), claimcheck.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sim.Clock.Advance(2 * time.Hour)
		if _, err := s.Put(context.Background(), "lc", bytes.NewReader(data), claimcheck.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		_ = r1
		n := sim.Written()
		if n != 3 {
			t.Errorf("%d objects written, want 2 and the owner marker (no dedup onto an object a 1-day rule may expire first)", n)
		}
	})
}
