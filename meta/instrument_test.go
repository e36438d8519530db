package meta_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/internal/testkit/metrictest"
	"github.com/claimcheck/claimcheck/internal/testkit/tracingtest"
	"github.com/claimcheck/claimcheck/meta"
)

const (
	totalName    = "claimcheck_meta_operations_total"
	durationName = "claimcheck_meta_operation_duration_seconds"
)

// gathered returns the counters as "operation/result" → value and the
// histograms' sample counts as operation → count.
func gathered(t *testing.T, g prometheus.Gatherer) (counters, samples map[string]float64) {
	t.Helper()
	counters = map[string]float64{}
	for _, s := range metrictest.Find(t, g, totalName) {
		counters[s.Labels["operation"]+"/"+s.Labels["result"]] = s.Value
	}
	return counters, metrictest.SumBy(t, g, durationName, "operation")
}

// fake answers a few methods the way a real store does on its different
// paths; the others are never called.
type fake struct{ meta.Store }

var errDown = errors.New("database is down")

func (fake) Blob(_ context.Context, id string) (meta.Blob, error) {
	return meta.Blob{ID: id}, nil
}

func (fake) Claim(_ context.Context, id string) (meta.Claim, error) {
	return meta.Claim{}, fmt.Errorf("claim %s: %w", id, meta.ErrNotFound)
}

func (fake) Commit(context.Context, meta.CommitParams) (meta.CommitResult, error) {
	return meta.CommitResult{}, fmt.Errorf("commit: %w", meta.ErrConflict)
}

func (fake) CreatePending(context.Context, meta.CreatePendingParams) error {
	return fmt.Errorf("create: %w", &meta.QuotaError{Namespace: "ns", Resource: "bytes"})
}

func (fake) DestroyDataKey(context.Context, string, time.Time) (meta.DataKey, error) {
	return meta.DataKey{}, meta.ErrHeld
}

func (fake) Namespace(ctx context.Context, _ string) (meta.Namespace, error) {
	return meta.Namespace{}, fmt.Errorf("namespace: %w", context.Canceled)
}

func (fake) OldestDue(context.Context) (time.Time, error) {
	return time.Time{}, fmt.Errorf("oldest due: %w", context.DeadlineExceeded)
}

func (fake) Ping(context.Context) error { return errDown }

func (fake) Close() error { return nil }

func (fake) TryLease(context.Context, string, string, time.Time, time.Duration) (bool, error) {
	return false, nil // another holder has it: a normal answer
}

func (fake) FinishClaim(_ context.Context, id, _ string, _ time.Time, _ bool) (meta.FinishResult, bool, error) {
	return meta.FinishResult{Claim: meta.Claim{ID: id}}, true, nil
}

func TestMetricsResults(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	s := meta.Instrument(fake{}, meta.Instrumentation{Registerer: reg})

	// Every series exists from the start, at zero, for every method of
	// Store but Close, named after the method.
	counters, samples := gathered(t, reg)
	var methods []string
	for m := range reflect.TypeFor[meta.Store]().Methods() {
		if m.Name != "Close" {
			methods = append(methods, m.Name)
		}
	}
	if got := slices.Sorted(maps.Keys(samples)); !slices.Equal(got, methods) {
		t.Errorf("operations = %v,\nwant the methods of Store but Close: %v", got, methods)
	}
	for _, m := range methods {
		for _, res := range []string{"ok", "not_found", "conflict", "refused", "canceled", "error"} {
			if v, ok := counters[m+"/"+res]; !ok || v != 0 {
				t.Errorf("%s{%s,%s} = %v, %v before any call; want 0", totalName, m, res, v, ok)
			}
		}
	}
	if len(counters) != len(methods)*6 {
		t.Errorf("%d counter series, want %d", len(counters), len(methods)*6)
	}

	// Values and errors pass through unchanged.
	if b, err := s.Blob(ctx, "b1"); err != nil || b.ID != "b1" {
		t.Errorf("Blob = %+v, %v", b, err)
	}
	if _, err := s.Claim(ctx, "c1"); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("Claim = %v, want ErrNotFound", err)
	}
	if _, err := s.Commit(ctx, meta.CommitParams{}); !errors.Is(err, meta.ErrConflict) {
		t.Errorf("Commit = %v, want ErrConflict", err)
	}
	var qe *meta.QuotaError
	if err := s.CreatePending(ctx, meta.CreatePendingParams{}); !errors.As(err, &qe) {
		t.Errorf("CreatePending = %v, want a *QuotaError", err)
	}
	if _, err := s.DestroyDataKey(ctx, "ns", time.Time{}); err != meta.ErrHeld {
		t.Errorf("DestroyDataKey = %v, want ErrHeld", err)
	}
	_, _ = s.Namespace(ctx, "ns")
	_, _ = s.OldestDue(ctx)
	if err := s.Ping(ctx); err != errDown {
		t.Errorf("Ping = %v, want the wrapped store's error", err)
	}
	if ok, err := s.TryLease(ctx, "l", "me", time.Time{}, time.Minute); ok || err != nil {
		t.Errorf("TryLease = %v, %v; want false, nil", ok, err)
	}
	if res, done, err := s.FinishClaim(ctx, "c2", meta.ReasonDeleted, time.Time{}, false); !done || err != nil || res.Claim.ID != "c2" {
		t.Errorf("FinishClaim = %+v, %v, %v", res, done, err)
	}
	counters, samples = gathered(t, reg)
	want := map[string]float64{
		"Blob/ok":                1,
		"Claim/not_found":        1,
		"Commit/conflict":        1, // a lost compare-and-swap
		"CreatePending/refused":  1, // over quota
		"DestroyDataKey/refused": 1, // on legal hold
		"Namespace/canceled":     1,
		"OldestDue/error":        1, // a deadline that passed: the database was slow
		"Ping/error":             1,
		"TryLease/ok":            1, // lost, but reported as a normal result
		"FinishClaim/ok":         1,
	}
	if got := metrictest.NonZero(counters); !maps.Equal(got, want) {
		t.Errorf("counters = %v,\nwant %v", got, want)
	}
	for op := range want {
		name, _, _ := strings.Cut(op, "/")
		if samples[name] != 1 {
			t.Errorf("%s{%s} has %v samples, want 1", durationName, name, samples[name])
		}
	}
}

// TestMetricsNoAllocs checks that counting a call allocates nothing: the
// label values are bound once, at construction.
func TestMetricsNoAllocs(t *testing.T) {
	ctx := context.Background()
	s := meta.Instrument(fake{}, meta.Instrumentation{})
	if n := testing.AllocsPerRun(100, func() { _, _ = s.Blob(ctx, "b") }); n != 0 {
		t.Errorf("Blob through the wrapper allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = s.FinishClaim(ctx, "c", "", time.Time{}, false) }); n != 0 {
		t.Errorf("FinishClaim through the wrapper allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Ping(ctx) }); n != 0 {
		t.Errorf("a failing Ping through the wrapper allocates %v times per call, want 0", n)
	}
}

// TestTracingResults checks the spans: named after the operation, with
// its result, failed only on an error, and none outside a trace.
func TestTracingResults(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	s := meta.Instrument(fake{}, meta.Instrumentation{TracerProvider: tp, System: "sqlite"})

	// No span without a trace to belong to.
	_ = s.Ping(context.Background())
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans outside a trace, want 0", n)
	}

	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	_, _ = s.Claim(ctx, "c1")
	_ = s.Ping(ctx)
	_, _ = s.TryLease(ctx, "l", "me", time.Time{}, time.Minute)
	_ = s.Close()
	parent.End()
	spans := tracingtest.Spans(exp.GetSpans())
	if got, want := spans.Names(), []string{"meta Claim", "meta Ping", "meta TryLease", "parent"}; !slices.Equal(got, want) {
		t.Fatalf("spans = %v, want %v", got, want)
	}
	for _, c := range []struct{ op, result string }{{"Claim", "not_found"}, {"Ping", "error"}, {"TryLease", "ok"}} {
		sp := spans.Named(t, "meta "+c.op)
		tracingtest.WantAttr(t, sp, "db.operation.name", c.op)
		tracingtest.WantAttr(t, sp, "db.system.name", "sqlite")
		tracingtest.WantAttr(t, sp, "claimcheck.result", c.result)
		if sp.SpanKind != trace.SpanKindClient || sp.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %s: kind %v, parent %v; want a client child of the caller's span", sp.Name, sp.SpanKind, sp.Parent.SpanID())
		}
		if failed := sp.Status.Code == codes.Error; failed != (c.result == "error") {
			t.Errorf("span %s: status %v with result %s; only an error fails a span", sp.Name, sp.Status, c.result)
		}
	}
}
