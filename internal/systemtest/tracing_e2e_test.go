package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// jaegerTrace is the part of Jaeger's query API answer
// (/api/traces/{id}) the test reads.
type jaegerTrace struct {
	Data []struct {
		TraceID string `json:"traceID"`
		Spans   []struct {
			SpanID        string      `json:"spanID"`
			OperationName string      `json:"operationName"`
			ProcessID     string      `json:"processID"`
			References    []jaegerRef `json:"references"`
			Tags          []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
		} `json:"processes"`
	} `json:"data"`
}

// fetchTrace reads trace id back from Jaeger until it has every span
// named in want (exports are batched, and Jaeger stores what arrives a
// moment later), bounded in time.
func fetchTrace(t *testing.T, query, id string, want ...string) jaegerTrace {
	t.Helper()
	var tr jaegerTrace
	deadline := time.Now().Add(30 * time.Second)
	for {
		missing := want
		resp, err := http.Get(query + "/api/traces/" + id)
		if err == nil {
			tr = jaegerTrace{}
			if resp.StatusCode == http.StatusOK {
				err = json.NewDecoder(resp.Body).Decode(&tr)
			}
			resp.Body.Close()
			if err == nil && len(tr.Data) == 1 {
				missing = nil
				have := map[string]bool{}
				for _, s := range tr.Data[0].Spans {
					have[s.OperationName] = true
				}
				for _, w := range want {
					if !have[w] {
						missing = append(missing, w)
					}
				}
			}
		}
		if len(missing) == 0 {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s in Jaeger lacks spans %v (last answer: %+v, err %v)", id, missing, tr, err)
		}
		time.Sleep(200 * time.Millisecond) // polling another process's store
	}
}

// TestTracingThroughJaeger is the offload hop as a platform team sees
// it: a Go producer puts a payload under its span, a Python consumer
// redeems it with the traceparent the message carried, and Jaeger holds
// one trace: producer, the server's request, the engine's put with its
// metadata and object storage spans, and the consumer's redeem. A second
// consumer whose message lost its headers gets a trace of its own, whose
// redeem links to the put.
func TestTracingThroughJaeger(t *testing.T) {
	otlp, query := os.Getenv("TEST_JAEGER_OTLP"), os.Getenv("TEST_JAEGER_QUERY")
	if otlp == "" || query == "" {
		t.Skip("TEST_JAEGER_OTLP and TEST_JAEGER_QUERY are not set: no Jaeger to export to (scripts/jaeger.sh starts one; scripts/test.sh does)")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the Python consumer cannot run")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix) // crypto/rand does not fail
	service := "claimcheck-e2e-" + hex.EncodeToString(suffix)
	url, _ := startServerEnv(t, bin, dir, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp, "OTEL_SERVICE_NAME=" + service,
		"OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_TRACES_SAMPLER=parentbased_always_on",
	}, "--data", filepath.Join(dir, "data"))

	// The producer: an application with its own OpenTelemetry set-up,
	// exporting to the same collector.
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(otlp+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(semconv.ServiceName(service + "-producer"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	defer func() { _ = tp.Shutdown(ctx) }()
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })

	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	pctx, produce := tp.Tracer("producer").Start(ctx, "produce order")
	payload := bytes.Repeat([]byte(`{"sku":"A-1","qty":3}`), 4096)
	ref, err := c.Put(pctx, "orders", bytes.NewReader(payload), claimcheck.PutOptions{ContentType: "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	// What the bus carries beside the reference.
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(pctx, carrier)
	produce.End()
	traceID := produce.SpanContext().TraceID().String()
	refJSON, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}

	// The Python consumer, with the standard library only: it passes the
	// message's traceparent to the client.
	_, file, _, _ := runtime.Caller(0)
	pyPath := filepath.Join(filepath.Dir(file), "..", "..", "clients", "python")
	consume := func(traceparent string) string {
		t.Helper()
		script := `
import json, sys, hashlib
import claimcheck
url, ref, tp = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
c = claimcheck.Client(url)
if tp:
    with claimcheck.trace_context(tp):
        data = c.get_bytes(ref)
else:
    data = c.get_bytes(ref)
print(len(data), hashlib.sha256(data).hexdigest())
`
		cmd := exec.Command(python, "-c", script, url, string(refJSON), traceparent)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+pyPath, "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python consumer: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got, want := consume(carrier["traceparent"]), fmt.Sprint(len(payload), " ", ref.Digest[len("sha256:"):]); got != want {
		t.Fatalf("python consumer read %q, want %q", got, want)
	}

	tr := fetchTrace(t, query, traceID, "produce order",
		"PUT /v1/namespaces/{ns}/claims", "claimcheck.put", "meta CreatePending", "blob put", "meta Commit",
		"GET /v1/claims/{id}", "claimcheck.redeem", "blob get")
	services := map[string]bool{}
	var putSpan string
	for _, s := range tr.Data[0].Spans {
		services[tr.Data[0].Processes[s.ProcessID].ServiceName] = true
		if s.OperationName == "claimcheck.put" {
			putSpan = s.SpanID
		}
	}
	if !services[service] || !services[service+"-producer"] {
		t.Fatalf("the trace's services %v lack the producer's or the server's", services)
	}
	// The consumer's request continues the producer's span (the
	// traceparent the message carried), and its redeem links to the put.
	produceSpan := produce.SpanContext().SpanID().String()
	for _, s := range tr.Data[0].Spans {
		switch s.OperationName {
		case "GET /v1/claims/{id}":
			if !hasRef(s.References, "CHILD_OF", traceID, produceSpan) {
				t.Errorf("the consumer's request %s is not a child of the producer's span %s: %+v", s.SpanID, produceSpan, s.References)
			}
		case "claimcheck.redeem":
			if !hasRef(s.References, "FOLLOWS_FROM", traceID, putSpan) {
				t.Errorf("the consumer's redeem %s has no link to the put %s: %+v", s.SpanID, putSpan, s.References)
			}
		}
	}

	// A consumer whose message lost its headers: its redeem starts a new
	// trace, which links to the put.
	consume("")
	redeemTrace := findRedeemTrace(t, query, service, traceID)
	linked := false
	for _, s := range redeemTrace.Data[0].Spans {
		linked = linked || (s.OperationName == "claimcheck.redeem" && hasRef(s.References, "FOLLOWS_FROM", traceID, putSpan))
	}
	if !linked {
		t.Fatalf("the headerless redeem's trace %s has no link to the put %s/%s", redeemTrace.Data[0].TraceID, traceID, putSpan)
	}
}

// findRedeemTrace finds, through Jaeger's search, the trace of service's
// redeems that is not notTrace, and reads it whole.
func findRedeemTrace(t *testing.T, query, service, notTrace string) jaegerTrace {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(query + "/api/traces?service=" + service + "&operation=claimcheck.redeem&limit=20&lookback=1h")
		if err == nil {
			var found jaegerTrace
			err = json.NewDecoder(resp.Body).Decode(&found)
			resp.Body.Close()
			for _, d := range found.Data {
				if err == nil && d.TraceID != notTrace {
					return fetchTrace(t, query, d.TraceID, "GET /v1/claims/{id}", "claimcheck.redeem")
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger has no second redeem trace of %s (err %v)", service, err)
		}
		time.Sleep(200 * time.Millisecond) // polling another process's store
	}
}

// jaegerRef is a span's reference in Jaeger's answer: its parent
// (CHILD_OF) or a span link (FOLLOWS_FROM).
type jaegerRef = struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// hasRef reports whether refs holds a reference of refType to the span
// traceID/spanID.
func hasRef(refs []jaegerRef, refType, traceID, spanID string) bool {
	for _, r := range refs {
		if r.RefType == refType && r.TraceID == traceID && r.SpanID == spanID {
			return true
		}
	}
	return false
}
