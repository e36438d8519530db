package tracing

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck"
)

func env(m map[string]string) Getenv { return func(k string) string { return m[k] } }

func TestOn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		env     map[string]string
		want    bool
		wantErr string
	}{
		{name: "off by default"},
		{name: "config", cfg: Config{Enabled: true}, want: true},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, want: true},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, want: true},
		{name: "exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{name: "exporter none wins", cfg: Config{Enabled: true}, env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}},
		{name: "sdk disabled wins", cfg: Config{Enabled: true}, env: map[string]string{"OTEL_SDK_DISABLED": "true"}},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: "OTEL_TRACES_EXPORTER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.On(env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("On = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Protocol: "thrift"}, "tracing.protocol"},
		{Config{Sampler: "sometimes"}, "tracing.sampler"},
		{Config{Sampler: "traceidratio", SamplerArg: "2"}, "tracing.sampler_arg"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	if err := (Config{Protocol: "grpc", Sampler: "parentbased_traceidratio", SamplerArg: "0.25"}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSetupRefusesABadSamplerVariable(t *testing.T) {
	_, err := Setup(context.Background(), Config{Enabled: true}, env(map[string]string{"OTEL_TRACES_SAMPLER": "mostly"}))
	if err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER") {
		t.Fatalf("err %v, want one naming OTEL_TRACES_SAMPLER", err)
	}
}

func TestSetupOffSetsNothing(t *testing.T) {
	p, err := Setup(context.Background(), Config{}, env(nil))
	if err != nil || p.TracerProvider != nil {
		t.Fatalf("off: %v, %v", p.TracerProvider, err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestTraceURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":               "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":              "http://127.0.0.1:4318/v1/traces",
		"https://collector.example/v1/traces": "https://collector.example/v1/traces",
		"https://collector.example/otlp/in":   "https://collector.example/otlp/in",
	} {
		if got := traceURL(in); got != want {
			t.Errorf("traceURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// Tracing off must cost the request path nothing: no allocation.
func TestOffAllocatesNothing(t *testing.T) {
	var off *Tracer
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, sp := off.Start(ctx, "claimcheck.put")
		if sp.IsRecording() {
			sp.SetAttributes(Namespace.String("x"))
		}
		End(sp, nil)
		_ = c
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per operation with tracing off, want 0", allocs)
	}
}

func TestEndRecordsTheGoneReason(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := NewTracer(tp, nil)
	_, sp := tr.Start(context.Background(), "claimcheck.redeem")
	End(sp, errors.Join(errors.New("redeem"), &claimcheck.GoneError{ID: "c", Reason: claimcheck.ReasonReleased}))
	s := exp.GetSpans()[0]
	if s.Status.Code.String() != "Error" {
		t.Fatalf("status %v", s.Status)
	}
	found := false
	for _, kv := range s.Attributes {
		found = found || (kv.Key == GoneReason && kv.Value.AsString() == "released")
	}
	if !found {
		t.Fatalf("attributes %v lack the gone reason", s.Attributes)
	}
}

func TestTraceParentRoundTrip(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	_, sp := tp.Tracer("t").Start(context.Background(), "put")
	tpv := TraceParent(sp.SpanContext())
	if !strings.HasPrefix(tpv, "00-"+sp.SpanContext().TraceID().String()) {
		t.Fatalf("traceparent %q", tpv)
	}
	if got := SpanContextOf(tpv); got.SpanID() != sp.SpanContext().SpanID() || !got.IsSampled() {
		t.Fatalf("parsed %v, want %v", got, sp.SpanContext())
	}
	if SpanContextOf("").IsValid() || SpanContextOf("garbage").IsValid() {
		t.Fatal("an empty or bad traceparent parsed")
	}
	if TraceParent(trace.SpanContext{}) != "" {
		t.Fatal("an invalid span context has a traceparent")
	}
}

func TestLogHandlerAddsIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewTextHandler(&buf, nil))).With("component", "x")
	tp := sdktrace.NewTracerProvider()
	ctx, sp := tp.Tracer("t").Start(context.Background(), "op")
	log.InfoContext(ctx, "hello")
	log.Info("no context")
	out := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(out[0], "trace_id="+sp.SpanContext().TraceID().String()) || !strings.Contains(out[0], "span_id="+sp.SpanContext().SpanID().String()) {
		t.Fatalf("log line %q lacks the ids", out[0])
	}
	if strings.Contains(out[1], "trace_id") {
		t.Fatalf("log line without a span has ids: %q", out[1])
	}
}
