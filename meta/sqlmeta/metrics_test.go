package sqlmeta

import (
	"context"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
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
		before := metrictest.SumBy(t, reg, "claimcheck_meta_operations_total", "operation")
		m.Call(args)
		after := metrictest.SumBy(t, reg, "claimcheck_meta_operations_total", "operation")
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
