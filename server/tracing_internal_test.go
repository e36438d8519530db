package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/tracingtest"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// TestSpansNamedByRoute sends a request to every traced route of the
// route table, on a server without auth (the handler's own answer, a 404
// for ids that do not exist), on one with auth and no key (401), and on
// one with CORS on, as a browser's preflight too, and checks that each
// request's span is named "METHOD /route/template" with http.route,
// whatever the answer. A request no route matches is named by its method
// alone (the HTTP semantic conventions: a path is no name).
func TestSpansNamedByRoute(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(ctx) })
	store := enginetest.Open(t, engine.Config{Data: dir, MetaStore: m, TracerProvider: tp})
	servers := map[string]*Server{
		"open":  New(Config{Claims: store, TracerProvider: tp}),
		"keyed": New(Config{Claims: store, TracerProvider: tp, Auth: auth.New(m, nil), ClaimNamespace: store.ClaimNamespace}),
		"browser": New(Config{Claims: store, TracerProvider: tp,
			Limits: Limits{CORS: CORS{AllowedOrigins: Origins{"https://app.example.com"}}}}),
	}
	clients := 0
	for name, s := range servers {
		// send makes one request and returns its span and status. The
		// handler is called directly: its span has ended when it returns.
		send := func(method, path string, header ...string) (tracetest.SpanStub, int) {
			t.Helper()
			exp.Reset()
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			rec := hangUp{httptest.NewRecorder(), cancel}
			req := httptest.NewRequestWithContext(rctx, method, path, nil)
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			// A client address of its own: failed keys are limited per
			// address, and each request here has none.
			clients++
			req.RemoteAddr = fmt.Sprintf("127.0.%d.%d:40000", clients/200, clients%200+1)
			s.ServeHTTP(rec, req)
			var server []tracetest.SpanStub
			for _, sp := range exp.GetSpans() {
				if !sp.Parent.IsValid() {
					server = append(server, sp)
				}
			}
			if len(server) != 1 {
				t.Fatalf("%s %s: %d root spans %v", method, path, len(server), tracingtest.Spans(exp.GetSpans()).Names())
			}
			return server[0], rec.Code
		}
		for _, rt := range routes {
			if rt.target == targetOpen || (rt.only != nil && !rt.only(s)) {
				continue // probes and scrapes are not traced
			}
			method, template, _ := strings.Cut(rt.pattern, " ")
			sp, status := send(method, wildcard.ReplaceAllString(template, "nope"))
			if want := method + " " + template; sp.Name != want {
				t.Errorf("%s: %s answered %d in a span named %q, want %q", name, rt.pattern, status, sp.Name, want)
			}
			tracingtest.WantAttr(t, sp, "http.route", template)
			tracingtest.WantAttr(t, sp, "http.response.status_code", int64(status))
			if name == "keyed" && rt.target != targetSigned && status != http.StatusUnauthorized {
				t.Errorf("%s without a key answered %d, want 401", rt.pattern, status)
			}
			if name != "browser" || !slices.Contains(corsMethods, method) {
				continue
			}
			sp, status = send(http.MethodOptions, wildcard.ReplaceAllString(template, "nope"),
				"Origin", "https://app.example.com", "Access-Control-Request-Method", method)
			if want := "OPTIONS " + template; sp.Name != want || status != http.StatusNoContent {
				t.Errorf("the preflight of %s answered %d in a span named %q, want 204 in %q", rt.pattern, status, sp.Name, want)
			}
			tracingtest.WantAttr(t, sp, "http.route", template)
		}
		sp, status := send(http.MethodGet, "/v1/no/such/route")
		if sp.Name != http.MethodGet || status != http.StatusNotFound {
			t.Errorf("%s: an unrouted GET answered %d in a span named %q, want 404 in one named GET", name, status, sp.Name)
		}
		if _, ok := tracingtest.Attr(sp, "http.route"); ok {
			t.Errorf("%s: an unrouted request's span has http.route", name)
		}
	}
}

// hangUp is a client that goes away once the status has come: a stream
// (GET /v1/events/stream) then ends, as every other answer does.
type hangUp struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (h hangUp) WriteHeader(code int) {
	h.ResponseRecorder.WriteHeader(code)
	h.cancel()
}
