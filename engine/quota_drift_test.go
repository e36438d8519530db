package engine

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/claimcheck/claimcheck/meta"
)

// assertNoQuotaDrift fails the test unless every namespace's quota
// counters equal the sums over its live claims: reservations equal the
// reservations of the pending claims, usage equals the sizes of the
// active ones, and the claim counts match. Call it at the end of every
// test that puts, uploads, reaps or collects: any path that refunds twice
// or never shows up here as drift.
func assertNoQuotaDrift(t testing.TB, s *Store) {
	t.Helper()
	ctx := context.Background()
	rows, err := s.meta.Namespaces(ctx)
	if err != nil {
		t.Fatalf("quota drift: Namespaces: %v", err)
	}
	sums, err := s.meta.CountNamespaces(ctx)
	if err != nil {
		t.Fatalf("quota drift: CountNamespaces: %v", err)
	}
	type counters struct{ used, reserved, active, pending int64 }
	of := func(n meta.Namespace) counters {
		return counters{n.UsedBytes, n.ReservedBytes, n.ActiveClaims, n.PendingClaims}
	}
	got := map[string]counters{}
	for _, n := range rows {
		got[n.Name] = of(n)
	}
	want := map[string]counters{}
	for _, n := range sums {
		want[n.Name] = of(n)
	}
	names := slices.Sorted(maps.Keys(got))
	for name := range want {
		if _, ok := got[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		g, w := got[name], want[name] // a missing entry is all zeros
		if g != w {
			t.Errorf("quota drift in namespace %s: counters used=%d reserved=%d active=%d pending=%d, live claims sum to used=%d reserved=%d active=%d pending=%d",
				name, g.used, g.reserved, g.active, g.pending, w.used, w.reserved, w.active, w.pending)
		}
	}
}
