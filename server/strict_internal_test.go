package server

import "testing"

// TestStrictTablesNameRoutes: every pattern the strict tables name is a
// route of the route table, so a renamed route cannot leave its
// parameters behind (and start refusing them).
func TestStrictTablesNameRoutes(t *testing.T) {
	known := map[string]bool{}
	for _, rt := range routes {
		known[rt.pattern] = true
	}
	for pattern := range routeParams {
		if !known[pattern] {
			t.Errorf("routeParams names %q, which is not in the route table", pattern)
		}
	}
	for pattern := range routeHeaders {
		if !known[pattern] {
			t.Errorf("routeHeaders names %q, which is not in the route table", pattern)
		}
	}
	for pattern := range refusedMethods {
		if !known[pattern] {
			t.Errorf("refusedMethods names %q, which is not in the route table", pattern)
		}
	}
}
