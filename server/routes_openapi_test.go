package server

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestRouteTableMatchesOpenAPI: docs/openapi.yaml describes every route of
// the route table and nothing else, with the same path wildcards, and its
// security says what the row's target says: the open and signed routes
// need no API key, every other one the bearer key. The contract check
// (openapi_test.go) validates the traffic of the routes; this keeps the
// two lists from drifting apart, including for a route no test calls.
func TestRouteTableMatchesOpenAPI(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type operation struct {
		Security *[]map[string][]string `yaml:"security"`
	}
	var doc struct {
		Security []map[string][]string           `yaml:"security"`
		Paths    map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	documented := map[string]bool{} // "METHOD /path"
	open := map[string]bool{}       // operations with security: []
	for path, item := range doc.Paths {
		for method, node := range item {
			switch method {
			case "get", "put", "post", "delete", "head", "patch", "options", "trace":
			default:
				continue // parameters, summary, ...
			}
			pattern := strings.ToUpper(method) + " " + path
			documented[pattern] = true
			var op operation
			if err := node.Decode(&op); err != nil {
				t.Fatalf("docs/openapi.yaml: %s: %v", pattern, err)
			}
			if op.Security != nil && len(*op.Security) == 0 {
				open[pattern] = true
			}
		}
	}
	if len(doc.Security) == 0 {
		t.Errorf("docs/openapi.yaml: no document-wide security (the bearer API key)")
	}
	for _, rt := range routes {
		if !documented[rt.pattern] {
			t.Errorf("route %s (server/routes.go) is not in docs/openapi.yaml", rt.pattern)
			continue
		}
		delete(documented, rt.pattern)
		wantOpen := rt.target == targetOpen || rt.target == targetSigned
		if open[rt.pattern] != wantOpen {
			t.Errorf("docs/openapi.yaml: %s has security: [] = %v, but the route table says it needs no key = %v", rt.pattern, open[rt.pattern], wantOpen)
		}
	}
	extra := slices.Sorted(func(yield func(string) bool) {
		for p := range documented {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range extra {
		t.Errorf("docs/openapi.yaml describes %s, which the route table (server/routes.go) does not serve", p)
	}
}
