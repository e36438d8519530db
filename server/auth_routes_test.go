package server

import (
	"os"
	"regexp"
	"testing"
)

// TestEveryRouteHasAPermission: each /v1 route registered in server.go
// has a row in the permission table. A route without one is refused to
// every key when auth is on (fail closed); this test makes a forgotten
// row show up before a user finds it.
func TestEveryRouteHasAPermission(t *testing.T) {
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`s\.handle\("([A-Z]+ /v1/[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 10 {
		t.Fatalf("found only %d /v1 routes in server.go; has registration moved?", len(routes))
	}
	for _, m := range routes {
		if _, ok := routeRules[m[1]]; !ok {
			t.Errorf("route %q has no row in routeRules (server/auth.go): with auth on, every key is refused", m[1])
		}
	}
}
