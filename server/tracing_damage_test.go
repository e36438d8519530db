package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/tracingtest"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/server"
)

// lockedBuffer is the log's destination: handlers of several requests
// write to it at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// take returns what was written and empties the buffer.
func (b *lockedBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}

// A redeem whose object was altered fails verification after its status
// and headers went out: the client sees 200 and then a broken body (a
// plain client: the connection is aborted) or the error in the trailer.
// The request's span is still a failure: named by its route, with the
// status that was sent, status Error and the exception; and every log
// line the request wrote, the damage mark's among them, carries the
// request's trace id and span id.
func TestTracedRedeemOfDamagedObject(t *testing.T) {
	for _, trailers := range []bool{false, true} {
		t.Run(map[bool]string{false: "aborted", true: "trailer"}[trailers], func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			logs := &lockedBuffer{}
			logger := slog.New(tracing.LogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			dir := t.TempDir()
			store := enginetest.Open(t, engine.Config{
				Data: dir, Logger: logger, TracerProvider: tp,
				Namespaces: map[string]claimcheck.Policy{"raw": {Compression: claimcheck.CompressionNone}},
			})
			srv := httptest.NewServer(server.New(server.Config{Claims: store, Logger: logger, TracerProvider: tp}))
			t.Cleanup(srv.Close)
			b := &bundle{http: srv, dir: dir}

			ref := b.put(t, "raw", bytes.Repeat([]byte("0123456789abcdef"), 1<<16))
			objs := b.objects(t)
			if len(objs) != 1 {
				t.Fatalf("want one object, have %v", objs)
			}
			path := filepath.Join(dir, "blobs", objs[0])
			stored, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			stored[len(stored)-10] ^= 0x20
			if err := os.WriteFile(path, stored, 0o600); err != nil {
				t.Fatal(err)
			}
			exp.Reset()
			logs.take()

			req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/claims/"+ref.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if trailers {
				req.Header.Set("TE", "trailers")
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s, want 200 and a failure after it", resp.Status)
			}
			if !trailers && rerr == nil {
				t.Fatal("the body of an aborted redeem read to its end")
			}
			srv.Close() // waits for the handler: its span has ended

			spans := tracingtest.Spans(exp.GetSpans())
			get := spans.Named(t, "GET /v1/claims/{id}")
			tracingtest.WantAttr(t, get, "http.route", "/v1/claims/{id}")
			tracingtest.WantAttr(t, get, "http.response.status_code", int64(200))
			if get.Status.Code != codes.Error || !strings.Contains(get.Status.Description, "checksum") {
				t.Errorf("span status %v %q, want Error with the reason", get.Status.Code, get.Status.Description)
			}
			exception := false
			for _, ev := range get.Events {
				exception = exception || ev.Name == "exception"
			}
			if !exception {
				t.Errorf("span events %v, want an exception", get.Events)
			}

			wantLogsInTrace(t, logs.take(), get, "integrity: blob marked damaged")
		})
	}
}

// wantLogsInTrace checks that every JSON log line carries the trace id of
// span (and a span id), and that one of them starts with want.
func wantLogsInTrace(t *testing.T, log string, span tracetest.SpanStub, want string) {
	t.Helper()
	found := false
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var line struct {
			Msg     string `json:"msg"`
			TraceID string `json:"trace_id"`
			SpanID  string `json:"span_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if line.TraceID != span.SpanContext.TraceID().String() || line.SpanID == "" {
			t.Errorf("log line %q has trace_id %q span_id %q, want the request's trace %s", line.Msg, line.TraceID, line.SpanID, span.SpanContext.TraceID())
		}
		found = found || strings.HasPrefix(line.Msg, want)
	}
	if !found {
		t.Errorf("no log line %q in\n%s", want, log)
	}
}
