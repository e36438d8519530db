package blob

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

func (f *fakeAbilities) PresignPut(context.Context, string, int64, string, time.Duration) (PresignedPut, error) {
	f.calls = append(f.calls, "PresignPut")
	return PresignedPut{URL: "https://example.invalid/x"}, nil
}

func (f *fakeAbilities) LifecycleRules(context.Context) ([]LifecycleRule, error) {
	f.calls = append(f.calls, "LifecycleRules")
	return []LifecycleRule{{ID: "r"}}, nil
}

func (f *fakeAbilities) PutLifecycleRules(context.Context, []LifecycleRule) error {
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

func has(s Store) (bd, ps, lc, ap bool) {
	_, bd = s.(BatchDeleter)
	_, ps = s.(Presigner)
	_, lc = s.(Lifecycler)
	_, ap = s.(Appender)
	return bd, ps, lc, ap
}

// TestWrappersKeepAbilities checks every combination of optional
// abilities: WithMetrics and NewCounting have exactly those of the store
// they wrap (hiding one turns a feature off without a word; adding one
// promises what nobody can serve), and each call reaches the store and is
// counted.
func TestWrappersKeepAbilities(t *testing.T) {
	ctx := t.Context()
	for mask := range 16 {
		wantBD, wantPS, wantLC, wantAP := mask&1 != 0, mask&2 != 0, mask&4 != 0, mask&8 != 0
		f := &fakeAbilities{}
		var a abilities
		if wantBD {
			a.bd = f
		}
		if wantPS {
			a.ps = f
		}
		if wantLC {
			a.lc = f
		}
		if wantAP {
			a.ap = f
		}
		mem, err := Open(ctx, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		inner := expose(mem, a)
		if bd, ps, lc, ap := has(inner); bd != wantBD || ps != wantPS || lc != wantLC || ap != wantAP {
			t.Fatalf("mask %04b: expose gave %T with abilities %v %v %v %v", mask, inner, bd, ps, lc, ap)
		}
		// Counting keeps them too, and its Counts.
		c, counts := NewCounting(inner)
		if bd, ps, lc, ap := has(c); bd != wantBD || ps != wantPS || lc != wantLC || ap != wantAP {
			t.Errorf("mask %04b: Counting of a store with BatchDeleter %v, Presigner %v, Lifecycler %v, Appender %v has %v, %v, %v, %v",
				mask, wantBD, wantPS, wantLC, wantAP, bd, ps, lc, ap)
		}
		if bd, ok := c.(BatchDeleter); ok {
			_, _ = bd.DeleteMany(ctx, []string{"a", "b"})
			if got := counts.Counts(); got.BatchDeletes != 1 || got.BatchKeys != 2 {
				t.Errorf("mask %04b: Counting counted %+v after one DeleteMany of 2 keys", mask, got)
			}
		}
		f.calls = nil

		reg := prometheus.NewRegistry()
		s := WithMetrics(inner, reg)
		if bd, ps, lc, ap := has(s); bd != wantBD || ps != wantPS || lc != wantLC || ap != wantAP {
			t.Errorf("mask %04b: wrapper of a store with BatchDeleter %v, Presigner %v, Lifecycler %v, Appender %v has %v, %v, %v, %v",
				mask, wantBD, wantPS, wantLC, wantAP, bd, ps, lc, ap)
			continue
		}
		want := map[string]map[string]float64{}
		var wantCalls []string
		if bd, ok := s.(BatchDeleter); ok {
			if n := bd.MaxBatch(); n != 7 {
				t.Errorf("MaxBatch = %d, want the wrapped store's 7", n)
			}
			if _, err := bd.DeleteMany(ctx, []string{"a", "b"}); err != nil {
				t.Fatal(err)
			}
			if failed, err := bd.DeleteMany(ctx, []string{"a", "bad"}); err != nil || failed["bad"] != errBoom {
				t.Errorf("DeleteMany = %v, %v; want the wrapped store's failures", failed, err)
			}
			want["delete_many"] = map[string]float64{"ok": 1, "error": 1}
			wantCalls = append(wantCalls, "DeleteMany", "DeleteMany")
		}
		if p, ok := s.(Presigner); ok {
			if pp, err := p.PresignPut(ctx, "k", 1, "00", time.Minute); err != nil || pp.URL == "" {
				t.Errorf("PresignPut = %v, %v", pp, err)
			}
			want["presign"] = map[string]float64{"ok": 1}
			wantCalls = append(wantCalls, "PresignPut")
		}
		if l, ok := s.(Lifecycler); ok {
			if rules, err := l.LifecycleRules(ctx); err != nil || len(rules) != 1 {
				t.Errorf("LifecycleRules = %v, %v", rules, err)
			}
			if err := l.PutLifecycleRules(ctx, nil); err != errBoom {
				t.Errorf("PutLifecycleRules = %v, want the wrapped store's error", err)
			}
			want["get_lifecycle"] = map[string]float64{"ok": 1}
			want["put_lifecycle"] = map[string]float64{"error": 1}
			wantCalls = append(wantCalls, "LifecycleRules", "PutLifecycleRules")
		}
		if ap, ok := s.(Appender); ok {
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
			want["begin_append"] = map[string]float64{"ok": 1}
			want["append"] = map[string]float64{"ok": 1}
			want["complete_append"] = map[string]float64{"error": 1}
			want["abort_append"] = map[string]float64{"ok": 1}
			wantCalls = append(wantCalls, "BeginAppend", "Append", "CompleteAppend", "AbortAppend")
		}
		if !slices.Equal(f.calls, wantCalls) {
			t.Errorf("mask %04b: calls reaching the store = %v, want %v", mask, f.calls, wantCalls)
		}
		if got := ops(t, reg); !equal(got, want) {
			t.Errorf("mask %04b: counters = %v, want %v", mask, got, want)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}
