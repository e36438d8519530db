package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/sweep"
)

// exported returns the metric families a real server exports after every
// path that creates a labelled series has run once: name → type.
func exported(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	fc := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	store := enginetest.Open(t, engine.Config{
		Clock: fc, Registerer: reg,
		Sweeper: claimcheckSweeperOff(),
	})
	srv := httptest.NewServer(server.New(server.Config{Claims: store, Ready: store.Ready, Gatherer: reg, Registerer: reg}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	// put, redeem, release, delete, a gone and a not-found answer, and a
	// sweep that finishes a claim by expiry and collects its blob.
	data := bytes.Repeat([]byte("claimcheck deploy test "), 4096)
	ref, err := c.Put(ctx, "orders", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Bytes(); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, ref, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Redeem(ctx, ref); !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("redeem after delete: %v, want gone", err)
	}
	if _, err := c.Stat(ctx, claimcheck.Ref{ID: "cc_AAAAAAAAAAAAAAAAAAAAAA"}); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Fatalf("stat of an unknown claim: %v, want not found", err)
	}
	if _, err := c.Put(ctx, "orders", bytes.NewReader([]byte("expires")), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	fc.Advance(48 * time.Hour)
	if _, err := store.SweepOnce(ctx, 0); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	families := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = f[3]
		}
	}
	if len(families) == 0 {
		t.Fatalf("/metrics exported nothing:\n%s", body)
	}
	return families
}

// claimcheckSweeperOff keeps the background sweeper from running on the
// wall clock; the test sweeps by hand on the fake clock.
func claimcheckSweeperOff() (c sweep.Config) {
	c.Disabled = true
	return c
}

// known reports whether a PromQL metric name is exported: a family, or a
// histogram or summary series (_bucket, _sum, _count) of one.
func known(families map[string]string, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if typ := families[base]; typ == "histogram" || typ == "summary" {
			return true
		}
	}
	return false
}

// metricNames returns the metric names an expression selects; every
// selector must name its metric.
func metricNames(t *testing.T, where, expr string) []string {
	t.Helper()
	e, err := promql.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v\n%s", where, err, expr)
		return nil
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				t.Errorf("%s: a selector without a metric name: %s", where, vs)
			}
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

func TestAlertRules(t *testing.T) {
	// rulefmt validates the file's structure, every expression (with the
	// PromQL parser) and the templates of labels and annotations.
	groups, errs := rulefmt.ParseFile("prometheus/alerts.yaml", false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	families := exported(t)
	want := []string{"ClaimcheckStorageLeak", "ClaimcheckTTLTooShort", "ClaimcheckDeleteFailures",
		"ClaimcheckSweeperLag", "ClaimcheckMissingObjects", "ClaimcheckDeadLetters",
		"ClaimcheckSubscriptionLagging", "ClaimcheckSubscriptionDeadLettered"}
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" || r.Labels["severity"] == "" {
				t.Errorf("alert %s: needs a summary, a description and a severity", r.Alert)
			}
			for _, name := range metricNames(t, "alert "+r.Alert, r.Expr) {
				if !known(families, name) {
					t.Errorf("alert %s: metric %s is not exported by the server", r.Alert, name)
				}
			}
		}
	}
	for _, a := range want {
		if !slices.Contains(alerts, a) {
			t.Errorf("alert %s is missing", a)
		}
	}
}

// promql is Prometheus' own PromQL parser with its default options.
var promql = parser.NewParser(parser.Options{})

// grafanaVars stand in for the dashboard's variables, so its expressions
// parse as plain PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$namespace", ".*")

var labelValues = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)

func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana/claimcheck.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("grafana/claimcheck.json is not valid JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Error("the dashboard needs a title and a uid")
	}
	families := exported(t)
	var titles []string
	for _, p := range dash.Panels {
		titles = append(titles, p.Title)
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range metricNames(t, "panel "+p.Title, grafanaVars.Replace(tg.Expr)) {
				if !known(families, name) {
					t.Errorf("panel %q: metric %s is not exported by the server", p.Title, name)
				}
			}
		}
	}
	for _, v := range dash.Templating.List {
		for _, m := range labelValues.FindAllStringSubmatch(v.Definition, -1) {
			if !known(families, m[1]) {
				t.Errorf("variable %s: metric %s is not exported by the server", v.Name, m[1])
			}
		}
	}
	for _, want := range []string{"Claim creation and deletion rates", "Outstanding claims", "Claim lifetime quantiles", "Storage estimate"} {
		if !slices.Contains(titles, want) {
			t.Errorf("panel %q is missing", want)
		}
	}
}
