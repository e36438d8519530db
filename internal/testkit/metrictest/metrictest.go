// Package metrictest reads metrics in tests from what a Prometheus
// registry gathers, by family name and labels: the value of one series,
// a sum over series, sums by one label.
//
// A test that holds a collector reads it with testutil.ToFloat64
// (client_golang's prometheus/testutil); a test that only holds the
// registry (the engine's, the server's, a wrapper's) reads it here.
// testutil counts and compares a gatherer's series but has no read of
// one series' value, so this package gathers once and reads the series
// the way testutil does: a counter's, gauge's or untyped metric's value,
// or a histogram's or summary's sample count.
package metrictest

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Series is one series of a metric family.
type Series struct {
	Labels map[string]string
	// Value is a counter's, gauge's or untyped metric's value, or a
	// histogram's or summary's sample count.
	Value float64
}

// Find gathers g and returns the series of the family name whose labels
// include labels, given as pairs: name, value, name, value... No series
// is no family of that name, or none with those labels. A failed gather
// fails tb.
func Find(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) []Series {
	tb.Helper()
	if len(labels)%2 != 0 {
		tb.Fatalf("metrictest: labels %q are not name, value pairs", labels)
	}
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatalf("metrictest: gather: %v", err)
	}
	var out []Series
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			s := Series{Labels: map[string]string{}}
			switch {
			case m.Counter != nil:
				s.Value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				s.Value = m.GetGauge().GetValue()
			case m.Histogram != nil:
				s.Value = float64(m.GetHistogram().GetSampleCount())
			case m.Summary != nil:
				s.Value = float64(m.GetSummary().GetSampleCount())
			case m.Untyped != nil:
				s.Value = m.GetUntyped().GetValue()
			}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			if matches(s.Labels, labels) {
				out = append(out, s)
			}
		}
	}
	return out
}

// Value is the value of the one series of name whose labels include
// labels; tb fails when there is no such series, or more than one (as
// testutil.ToFloat64 does with a collector).
func Value(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	tb.Helper()
	found := Find(tb, g, name, labels...)
	if len(found) != 1 {
		tb.Fatalf("metrictest: %d series of %s with labels %q, want 1", len(found), name, labels)
	}
	return found[0].Value
}

// Sum adds up the series of name whose labels include labels; no series
// sums to 0.
func Sum(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	tb.Helper()
	sum := 0.0
	for _, s := range Find(tb, g, name, labels...) {
		sum += s.Value
	}
	return sum
}

// SumBy adds up the series of name whose labels include labels, by the
// value of their label key.
func SumBy(tb testing.TB, g prometheus.Gatherer, name, key string, labels ...string) map[string]float64 {
	tb.Helper()
	out := map[string]float64{}
	for _, s := range Find(tb, g, name, labels...) {
		out[s.Labels[key]] += s.Value
	}
	return out
}

// NonZero drops the entries of m whose value is 0 and returns m.
func NonZero(m map[string]float64) map[string]float64 {
	maps.DeleteFunc(m, func(_ string, v float64) bool { return v == 0 })
	return m
}

func matches(have map[string]string, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		if v, ok := have[want[i]]; !ok || v != want[i+1] {
			return false
		}
	}
	return true
}
