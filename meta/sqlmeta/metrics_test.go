package sqlmeta

import (
	"context"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
	"github.com/claimcheck/claimcheck/internal/testkit/tracingtest"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/metatest"
)

// TestSQLiteConformanceWithMetrics runs the suite through meta.Instrument,
// metrics and spans: the wrapper must change nothing a caller can see.
func TestSQLiteConformanceWithMetrics(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	metatest.Run(t, func(t *testing.T) meta.Store {
		return meta.Instrument(openSQLiteStore(t), meta.Instrumentation{Registerer: prometheus.NewRegistry(), TracerProvider: tp, System: "sqlite"})
	})
}

// operationCounts sums claimcheck_meta_operations_total by operation.
func operationCounts(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	return metrictest.SumBy(t, g, "claimcheck_meta_operations_total", "operation")
}

// TestInstrumentEveryMethod calls every method of the wrapper once, on a
// real store, with zero arguments (whatever the store answers), in a
// trace, and checks that exactly the operation named after the method
// was counted and that it made one span, "meta <Method>" with
// db.operation.name <Method>: each generated method measures and traces
// itself, not a neighbour, and no method goes unnamed.
func TestInstrumentEveryMethod(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	s := meta.Instrument(openSQLiteStore(t), meta.Instrumentation{Registerer: reg, TracerProvider: tp})
	defer s.Close()
	traced, parent := tp.Tracer("test").Start(context.Background(), "test")
	defer parent.End()
	ctx := reflect.ValueOf(traced)
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
		exp.Reset()
		m.Call(args)
		after := operationCounts(t, reg)
		if _, ok := after[name]; !ok {
			t.Errorf("%s has no series", name)
		}
		spans := tracingtest.Spans(exp.GetSpans())
		if got := spans.Names(); len(got) != 1 || got[0] != "meta "+name {
			t.Errorf("calling %s made spans %q, want one named %q", name, got, "meta "+name)
		} else {
			tracingtest.WantAttr(t, spans[0], "db.operation.name", name)
		}
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
