package blob_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
)

var errBoom = errors.New("boom")

// fakeAbilities implements every optional ability and records the calls
// that reach it.
type fakeAbilities struct{ calls []string }

func (f *fakeAbilities) DeleteMany(_ context.Context, keys []string) (map[string]error, error) {
	f.calls = append(f.calls, "DeleteMany")
	if slices.Contains(keys, "bad") {
		return map[string]error{"bad": errBoom}, nil
	}
	return nil, nil
}

func (f *fakeAbilities) MaxBatch() int { return 7 }

func (f *fakeAbilities) PresignPut(context.Context, string, int64, string, time.Duration) (blob.PresignedPut, error) {
	f.calls = append(f.calls, "PresignPut")
	return blob.PresignedPut{URL: "https://example.invalid/x"}, nil
}

func (f *fakeAbilities) LifecycleRules(context.Context) ([]blob.LifecycleRule, error) {
	f.calls = append(f.calls, "LifecycleRules")
	return []blob.LifecycleRule{{ID: "r"}}, nil
}

func (f *fakeAbilities) PutLifecycleRules(context.Context, []blob.LifecycleRule) error {
	f.calls = append(f.calls, "PutLifecycleRules")
	return errBoom
}

func (f *fakeAbilities) BeginAppend(context.Context, string, int64) (string, error) {
	f.calls = append(f.calls, "BeginAppend")
	return "h", nil
}

func (f *fakeAbilities) Append(_ context.Context, _, _ string, _, off int64, _ io.Reader, durable func(int64) error) (int64, error) {
	f.calls = append(f.calls, "Append")
	return off + 1, durable(off + 1)
}

func (f *fakeAbilities) CompleteAppend(context.Context, string, string, int64) error {
	f.calls = append(f.calls, "CompleteAppend")
	return errBoom
}

func (f *fakeAbilities) AbortAppend(context.Context, string, string) error {
	f.calls = append(f.calls, "AbortAppend")
	return nil
}

func (f *fakeAbilities) CORSRequestHeaders() []string { return nil }

func (f *fakeAbilities) CORSRules(context.Context) ([]blob.CORSRule, error) {
	f.calls = append(f.calls, "CORSRules")
	return []blob.CORSRule{{ID: "c"}}, nil
}

func (f *fakeAbilities) PutCORSRules(context.Context, []blob.CORSRule) error {
	f.calls = append(f.calls, "PutCORSRules")
	return errBoom
}

// carrying is a store with exactly the abilities a: a wrapper's way of
// saying which it has.
type carrying struct {
	blob.Store
	a blob.Abilities
}

func (c carrying) Abilities() blob.Abilities { return c.a }

// has reports which abilities s has, in the order of the mask bits.
func has(s blob.Store) [5]bool {
	a := blob.AbilitiesOf(s)
	return [5]bool{a.BatchDeleter != nil, a.Presigner != nil, a.Lifecycler != nil, a.Appender != nil, a.CORSConfigurer != nil}
}

// TestAbilitiesOf: a backend has an ability by having its methods; a
// store that embeds another has none of the embedded store's (a method
// it overrides cannot be bypassed); a wrapper's Abilities method is the
// whole answer.
func TestAbilitiesOf(t *testing.T) {
	mem := blobtest.Open(t, "mem://")
	defer mem.Close()
	f := &fakeAbilities{}
	if got := has(struct {
		blob.Store
		*fakeAbilities
	}{mem, f}); got != [5]bool{true, true, true, true, true} {
		t.Errorf("a store with every ability's methods has %v", got)
	}
	if got := has(struct{ blob.Store }{carrying{mem, blob.Abilities{Presigner: f}}}); got != [5]bool{} {
		t.Errorf("a store embedding a Presigner has %v, want none", got)
	}
	if got := has(carrying{struct {
		blob.Store
		*fakeAbilities
	}{mem, f}, blob.Abilities{Appender: f}}); got != [5]bool{false, false, false, true, false} {
		t.Errorf("a wrapper carrying only Appender has %v", got)
	}
}

// TestWrappersKeepAbilities checks every combination of optional
// abilities: WithMetrics and NewCounting have exactly those of the store
// they wrap (hiding one turns a feature off without a word; adding one
// promises what nobody can serve), and each call reaches the store and is
// counted.
func TestWrappersKeepAbilities(t *testing.T) {
	ctx := t.Context()
	for mask := range 32 {
		var want [5]bool
		for i := range want {
			want[i] = mask&(1<<i) != 0
		}
		f := &fakeAbilities{}
		var a blob.Abilities
		if want[0] {
			a.BatchDeleter = f
		}
		if want[1] {
			a.Presigner = f
		}
		if want[2] {
			a.Lifecycler = f
		}
		if want[3] {
			a.Appender = f
		}
		if want[4] {
			a.CORSConfigurer = f
		}
		mem, err := blob.Open(ctx, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		inner := carrying{mem, a}
		if got := has(inner); got != want {
			t.Fatalf("mask %05b: the store has abilities %v", mask, got)
		}
		// Counting keeps them too, and its Counts.
		c, counts := blob.NewCounting(inner)
		if got := has(c); got != want {
			t.Errorf("Counting of a store with abilities %v has %v", want, got)
		}
		if bd := blob.AbilitiesOf(c).BatchDeleter; bd != nil {
			_, _ = bd.DeleteMany(ctx, []string{"a", "b"})
			if got := counts.Counts(); got.BatchDeletes != 1 || got.BatchKeys != 2 {
				t.Errorf("mask %05b: Counting counted %+v after one DeleteMany of 2 keys", mask, got)
			}
		}
		f.calls = nil

		reg := prometheus.NewRegistry()
		s := blob.WithMetrics(inner, reg)
		if got := has(s); got != want {
			t.Errorf("wrapper of a store with abilities %v has %v", want, got)
			continue
		}
		sa := blob.AbilitiesOf(s)
		wantOps := map[string]map[string]float64{}
		var wantCalls []string
		if bd := sa.BatchDeleter; bd != nil {
			if n := bd.MaxBatch(); n != 7 {
				t.Errorf("MaxBatch = %d, want the wrapped store's 7", n)
			}
			if _, err := bd.DeleteMany(ctx, []string{"a", "b"}); err != nil {
				t.Fatal(err)
			}
			if failed, err := bd.DeleteMany(ctx, []string{"a", "bad"}); err != nil || failed["bad"] != errBoom {
				t.Errorf("DeleteMany = %v, %v; want the wrapped store's failures", failed, err)
			}
			wantOps["delete_many"] = map[string]float64{"ok": 1, "error": 1}
			wantCalls = append(wantCalls, "DeleteMany", "DeleteMany")
		}
		if p := sa.Presigner; p != nil {
			if pp, err := p.PresignPut(ctx, "k", 1, "00", time.Minute); err != nil || pp.URL == "" {
				t.Errorf("PresignPut = %v, %v", pp, err)
			}
			wantOps["presign"] = map[string]float64{"ok": 1}
			wantCalls = append(wantCalls, "PresignPut")
		}
		if l := sa.Lifecycler; l != nil {
			if rules, err := l.LifecycleRules(ctx); err != nil || len(rules) != 1 {
				t.Errorf("LifecycleRules = %v, %v", rules, err)
			}
			if err := l.PutLifecycleRules(ctx, nil); err != errBoom {
				t.Errorf("PutLifecycleRules = %v, want the wrapped store's error", err)
			}
			wantOps["get_lifecycle"] = map[string]float64{"ok": 1}
			wantOps["put_lifecycle"] = map[string]float64{"error": 1}
			wantCalls = append(wantCalls, "LifecycleRules", "PutLifecycleRules")
		}
		if ap := sa.Appender; ap != nil {
			if h, err := ap.BeginAppend(ctx, "k", 3); err != nil || h != "h" {
				t.Errorf("BeginAppend = %q, %v; want the wrapped store's handle", h, err)
			}
			var recorded int64
			if o, err := ap.Append(ctx, "k", "h", 3, 1, strings.NewReader("x"), func(o int64) error { recorded = o; return nil }); o != 2 || err != nil || recorded != 2 {
				t.Errorf("Append = %d, %v (durable saw %d); want 2, nil, 2", o, err, recorded)
			}
			if err := ap.CompleteAppend(ctx, "k", "h", 3); err != errBoom {
				t.Errorf("CompleteAppend = %v, want the wrapped store's error", err)
			}
			if err := ap.AbortAppend(ctx, "k", "h"); err != nil {
				t.Errorf("AbortAppend = %v", err)
			}
			wantOps["begin_append"] = map[string]float64{"ok": 1}
			wantOps["append"] = map[string]float64{"ok": 1}
			wantOps["complete_append"] = map[string]float64{"error": 1}
			wantOps["abort_append"] = map[string]float64{"ok": 1}
			wantCalls = append(wantCalls, "BeginAppend", "Append", "CompleteAppend", "AbortAppend")
		}
		if cc := sa.CORSConfigurer; cc != nil {
			if rules, err := cc.CORSRules(ctx); err != nil || len(rules) != 1 {
				t.Errorf("CORSRules = %v, %v", rules, err)
			}
			if err := cc.PutCORSRules(ctx, nil); err != errBoom {
				t.Errorf("PutCORSRules = %v, want the wrapped store's error", err)
			}
			wantOps["get_cors"] = map[string]float64{"ok": 1}
			wantOps["put_cors"] = map[string]float64{"error": 1}
			wantCalls = append(wantCalls, "CORSRules", "PutCORSRules")
		}
		if !slices.Equal(f.calls, wantCalls) {
			t.Errorf("mask %05b: calls reaching the store = %v, want %v", mask, f.calls, wantCalls)
		}
		if got := ops(t, reg); !equal(got, wantOps) {
			t.Errorf("mask %05b: counters = %v, want %v", mask, got, wantOps)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}
