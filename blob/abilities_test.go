package blob

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
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

func has(s Store) (bd, ps, lc bool) {
	_, bd = s.(BatchDeleter)
	_, ps = s.(Presigner)
	_, lc = s.(Lifecycler)
	return bd, ps, lc
}

// TestWrappersKeepAbilities checks every combination of optional
// abilities: NewCounting has exactly those of the store it wraps (hiding
// one turns a feature off without a word; adding one promises what nobody
// can serve).
func TestWrappersKeepAbilities(t *testing.T) {
	ctx := t.Context()
	for mask := range 8 {
		wantBD, wantPS, wantLC := mask&1 != 0, mask&2 != 0, mask&4 != 0
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
		mem, err := Open(ctx, "mem://")
		if err != nil {
			t.Fatal(err)
		}
		inner := expose(mem, a)
		if bd, ps, lc := has(inner); bd != wantBD || ps != wantPS || lc != wantLC {
			t.Fatalf("mask %03b: expose gave %T with abilities %v %v %v", mask, inner, bd, ps, lc)
		}
		// Counting keeps them too, and its Counts.
		c := NewCounting(inner)
		if bd, ps, lc := has(c); bd != wantBD || ps != wantPS || lc != wantLC {
			t.Errorf("mask %03b: Counting of a store with BatchDeleter %v, Presigner %v, Lifecycler %v has %v, %v, %v",
				mask, wantBD, wantPS, wantLC, bd, ps, lc)
		}
		if bd, ok := c.(BatchDeleter); ok {
			_, _ = bd.DeleteMany(ctx, []string{"a", "b"})
			if got := c.Counts(); got.BatchDeletes != 1 || got.BatchKeys != 2 {
				t.Errorf("mask %03b: Counting counted %+v after one DeleteMany of 2 keys", mask, got)
			}
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}
