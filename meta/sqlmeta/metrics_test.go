package sqlmeta

import (
	"context"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/metatest"
)

// TestSQLiteConformanceWithMetrics runs the suite through meta.WithMetrics:
// the wrapper must change nothing a caller can see.
func TestSQLiteConformanceWithMetrics(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Store {
		return meta.WithMetrics(openSQLiteStore(t), prometheus.NewRegistry())
	})
}

// operationCounts sums claimcheck_meta_operations_total by operation.
func operationCounts(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "claimcheck_meta_operations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// TestMetricsEveryMethod calls every method of the wrapper once, on a real
// store, with zero arguments (whatever the store answers) and checks that
// exactly the operation named after the method was counted: each method's
// one-liner measures itself, not a neighbour.
func TestMetricsEveryMethod(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := meta.WithMetrics(openSQLiteStore(t), reg)
	defer s.Close()
	ctx := reflect.ValueOf(context.Background())
	v := reflect.ValueOf(s)
	for i := range v.NumMethod() {
		name := v.Type().Method(i).Name
		if name == "Close" {
			continue
		}
		m := v.Method(i)
		args := make([]reflect.Value, m.Type().NumIn())
		for j := range args {
			args[j] = reflect.Zero(m.Type().In(j))
		}
		args[0] = ctx
		before := operationCounts(t, reg)
		m.Call(args)
		after := operationCounts(t, reg)
		for op, n := range after {
			want := before[op]
			if op == name {
				want++
			}
			if n != want {
				t.Errorf("after calling %s: operation %s counted %v, want %v", name, op, n, want)
			}
		}
	}
}
