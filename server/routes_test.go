package server

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/sweep"
)

// The route list of docs/HTTP.md sits between these markers, as the
// markdown table routeDocTable renders.
const (
	routesBegin = "<!-- routes:begin (generated from server/routes.go; TestRouteTableMatchesDocs checks it) -->"
	routesEnd   = "<!-- routes:end -->"
)

// routeDocTable is the route table as docs/HTTP.md lists it.
func routeDocTable() string {
	var b strings.Builder
	b.WriteString("| route | permission (auth on) | does |\n|---|---|---|\n")
	for _, rt := range routes {
		b.WriteString("| `" + rt.pattern + "` | " + rt.permission() + " | " + rt.doc + " |\n")
	}
	return b.String()
}

// permission is the route's permission column.
func (rt route) permission() string {
	switch rt.target {
	case targetOpen:
		return "none"
	case targetSigned:
		return "none: the token in the URL"
	}
	return "`" + string(rt.op) + "`"
}

func readHTTPDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "HTTP.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// TestRouteTableMatchesDocs: the route list in docs/HTTP.md is the route
// table, row for row and in order. On failure it prints the list to put
// between the markers.
func TestRouteTableMatchesDocs(t *testing.T) {
	doc := readHTTPDoc(t)
	_, rest, ok := strings.Cut(doc, routesBegin)
	block, _, ok2 := strings.Cut(rest, routesEnd)
	if !ok || !ok2 {
		t.Fatalf("docs/HTTP.md has no route list between the lines\n%s\n%s", routesBegin, routesEnd)
	}
	want := routeDocTable()
	if strings.TrimSpace(block) == strings.TrimSpace(want) {
		return
	}
	got := strings.Split(strings.TrimSpace(block), "\n")
	rows := strings.Split(strings.TrimSpace(want), "\n")
	for _, l := range rows {
		if !slices.Contains(got, l) {
			t.Errorf("docs/HTTP.md's route list lacks the row\n%s", l)
		}
	}
	for _, l := range got {
		if l != "" && !slices.Contains(rows, l) {
			t.Errorf("docs/HTTP.md's route list has a row the route table (server/routes.go) has not\n%s", l)
		}
	}
	t.Errorf("docs/HTTP.md's route list differs from the route table; between the markers it should read:\n\n%s", want)
}

// docRoute finds a route named in inline code anywhere in docs/HTTP.md:
// `METHOD /path`, perhaps followed by a query or an optional part.
var docRoute = regexp.MustCompile("`(GET|HEAD|PUT|POST|DELETE|PATCH) (/[^`?\\[ ]*)")

// wildcard matches a path wildcard; prose may name one differently from
// the pattern ({id} for {key}).
var wildcard = regexp.MustCompile(`\{[^}]*\}`)

// TestDocsNameOnlyServedRoutes: prose outside the route list (the detailed
// sections) names no route the server does not serve, so a route removed
// or renamed in the table cannot live on in an example.
func TestDocsNameOnlyServedRoutes(t *testing.T) {
	served := map[string]bool{}
	for _, rt := range routes {
		served[wildcard.ReplaceAllString(rt.pattern, "{}")] = true
	}
	found := 0
	for _, m := range docRoute.FindAllStringSubmatch(readHTTPDoc(t), -1) {
		found++
		if name := wildcard.ReplaceAllString(m[1]+" "+m[2], "{}"); !served[name] {
			t.Errorf("docs/HTTP.md names %s %s, which is not in the route table (server/routes.go)", m[1], m[2])
		}
	}
	if found < len(routes) {
		t.Fatalf("found only %d routes named in docs/HTTP.md; has its format changed?", found)
	}
}

// TestRouteTable checks the rows' invariants: what the guard, authorize
// and the docs rely on.
func TestRouteTable(t *testing.T) {
	seen := map[string]bool{}
	for _, rt := range routes {
		method, path, ok := strings.Cut(rt.pattern, " ")
		if !ok || method == "" || !strings.HasPrefix(path, "/") {
			t.Errorf("%q: want METHOD /path", rt.pattern)
		}
		if seen[rt.pattern] {
			t.Errorf("%s: two rows", rt.pattern)
		}
		seen[rt.pattern] = true
		if rt.handler == nil {
			t.Errorf("%s: no handler", rt.pattern)
		}
		if strings.HasPrefix(path, "/v1/") {
			// The API: guarded, and with auth on a key needs a
			// permission (an empty op would refuse every key).
			if rt.target == targetOpen || rt.op == "" {
				t.Errorf("%s: an API route needs a permission and the guard (op %q, target %d)", rt.pattern, rt.op, rt.target)
			}
		} else if rt.target != targetOpen || rt.op != "" {
			t.Errorf("%s: outside /v1 routes are open (probes, metrics), not guarded", rt.pattern)
		}
		if rt.doc == "" || strings.ContainsAny(rt.doc, "|\n") {
			t.Errorf("%s: doc %q: want one line without |", rt.pattern, rt.doc)
		}
	}
	for _, p := range []string{claimRoute, uploadDataRoute} {
		if !seen[p] {
			t.Errorf("answers point at %s, which is not in the table", p)
		}
	}
	if got := routePath(uploadDataRoute, "cc_AAAAAAAAAAAAAAAAAAAAAA"); got != "/v1/uploads/cc_AAAAAAAAAAAAAAAAAAAAAA/data" {
		t.Errorf("upload data path = %q", got)
	}
}

// TestRoutesRegistered: New serves exactly the table's rows, those with a
// condition only where it holds (keys with auth, /metrics with a
// registry), and every request is routed by its row's pattern.
func TestRoutesRegistered(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	store := enginetest.Open(t, engine.Config{Data: dir, MetaStore: m, Sweeper: sweep.Config{Disabled: true},
		Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()})

	full := New(Config{Claims: store, Auth: auth.New(m, nil), ClaimNamespace: store.ClaimNamespace, Gatherer: prometheus.NewRegistry()})
	bare := New(Config{Claims: store})
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.pattern, " ")
		req, err := http.NewRequest(method, "http://127.0.0.1"+wildcard.ReplaceAllString(path, "x1"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, p := full.mux.Handler(req); p != rt.pattern {
			t.Errorf("%s: with auth and metrics on, routed to %q", rt.pattern, p)
		}
		want := rt.pattern
		if rt.only != nil {
			want = "" // keys without auth, /metrics without a registry: no route
		}
		if _, p := bare.mux.Handler(req); p != want {
			t.Errorf("%s: with auth and metrics off, routed to %q, want %q", rt.pattern, p, want)
		}
	}
}
