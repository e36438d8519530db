package blob_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
)

const (
	totalName    = "claimcheck_blob_operations_total"
	durationName = "claimcheck_blob_operation_duration_seconds"
)

// ops returns operation → result → count of every non-zero counter.
func ops(t *testing.T, g prometheus.Gatherer) map[string]map[string]float64 {
	t.Helper()
	out := map[string]map[string]float64{}
	for _, s := range metrictest.Find(t, g, totalName) {
		if s.Value == 0 {
			continue
		}
		op := s.Labels["operation"]
		if out[op] == nil {
			out[op] = map[string]float64{}
		}
		out[op][s.Labels["result"]] = s.Value
	}
	return out
}

func write(t *testing.T, s blob.Store, key, data string) {
	t.Helper()
	w, err := s.NewWriter(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsCount(t *testing.T) {
	ctx := t.Context()
	mem, err := blob.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s := blob.WithMetrics(mem, reg)
	defer s.Close()

	// Every series exists from the start, at zero.
	for _, op := range blob.OpNames {
		for _, res := range blob.ResultNames {
			if v := metrictest.Value(t, reg, totalName, "operation", op, "result", res); v != 0 {
				t.Errorf("%s{%s,%s} = %v before any call, want 0", totalName, op, res, v)
			}
		}
		if v := metrictest.Value(t, reg, durationName, "operation", op); v != 0 {
			t.Errorf("%s{%s} has %v samples before any call, want 0", durationName, op, v)
		}
	}

	write(t, s, "ns/a", "hello")
	r, err := s.NewReader(ctx, "ns/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	_ = r.Close() // a second Close counts nothing
	if _, err := s.NewReader(ctx, "ns/missing"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("NewReader of a missing object = %v, want ErrNotFound through the wrapper", err)
	}
	if _, err := s.Attributes(ctx, "ns/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Attributes(ctx, "ns/missing"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Attributes of a missing object = %v, want ErrNotFound", err)
	}
	if _, _, err := s.List(ctx, "ns/", "", 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "ns/a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "ns/a"); err != nil { // missing: no error, so ok
		t.Fatal(err)
	}
	// A write whose context is cancelled before Close.
	cctx, cancel := context.WithCancel(ctx)
	w, err := s.NewWriter(cctx, "ns/cancelled")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, "half"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Close(); err == nil {
		t.Fatal("Close after cancel = nil, want an error")
	}

	want := map[string]map[string]float64{
		"put":        {"ok": 1, "canceled": 1},
		"get":        {"ok": 1, "not_found": 1},
		"attributes": {"ok": 1, "not_found": 1},
		"list":       {"ok": 1},
		"delete":     {"ok": 2},
	}
	if got := ops(t, reg); !equal(got, want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
	for op, n := range map[string]float64{"put": 2, "get": 2, "attributes": 2, "list": 1, "delete": 2, "delete_many": 0} {
		if got := metrictest.Value(t, reg, durationName, "operation", op); got != n {
			t.Errorf("%s{%s} has %v samples, want %v", durationName, op, got, n)
		}
	}
}

func equal(a, b map[string]map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || len(v) != len(w) {
			return false
		}
		for r, n := range v {
			if w[r] != n {
				return false
			}
		}
	}
	return true
}

// faulty fails the way a broken backend does: errors that are neither
// ErrNotFound nor a cancellation.
type faulty struct{ blob.Store }

func (faulty) Delete(context.Context, string) error { return errBoom }

func (faulty) NewReader(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(iotestErrReader{}), nil
}

func (faulty) NewWriter(context.Context, string) (io.WriteCloser, error) {
	return nil, errBoom
}

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errBoom }

func TestMetricsErrors(t *testing.T) {
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	s := blob.WithMetrics(faulty{}, reg)
	if err := s.Delete(ctx, "k"); err != errBoom {
		t.Errorf("Delete = %v, want the wrapped store's error unchanged", err)
	}
	if _, err := s.NewWriter(ctx, "k"); err != errBoom {
		t.Errorf("NewWriter = %v, want the wrapped store's error unchanged", err)
	}
	r, err := s.NewReader(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err != errBoom {
		t.Errorf("Read = %v, want the wrapped store's error unchanged", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]float64{
		"delete": {"error": 1},
		"put":    {"error": 1},
		"get":    {"error": 1}, // opened fine, failed while streaming
	}
	if got := ops(t, reg); !equal(got, want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
}

// nopStore answers without doing anything, so that allocations measured
// around it are the wrapper's own.
type nopStore struct{ blob.Store }

func (nopStore) Attributes(context.Context, string) (blob.Attributes, error) {
	return blob.Attributes{}, nil
}

func (nopStore) Delete(context.Context, string) error { return blob.ErrNotFound }

// TestMetricsNoAllocs checks that counting a call allocates nothing: the
// label values are bound once, at construction.
func TestMetricsNoAllocs(t *testing.T) {
	ctx := context.Background()
	s := blob.WithMetrics(nopStore{}, prometheus.NewRegistry())
	if n := testing.AllocsPerRun(100, func() { _, _ = s.Attributes(ctx, "k") }); n != 0 {
		t.Errorf("Attributes through the wrapper allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Delete(ctx, "k") }); n != 0 {
		t.Errorf("a failing Delete through the wrapper allocates %v times per call, want 0", n)
	}
}
