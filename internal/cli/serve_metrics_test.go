package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/internal/cli"
)

// lockedBuffer is a bytes.Buffer that serve's logger and the test may
// use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var (
	apiLine     = regexp.MustCompile(`claimcheck serving" url=(http://127\.0\.0\.1:\d+)`)
	metricsLine = regexp.MustCompile(`metrics serving" url=(http://127\.0\.0\.1:\d+/metrics)`)
)

// serveInProcess runs serve with the config yaml on loopback ports until
// the test ends, and returns its stderr once the API is serving.
func serveInProcess(t *testing.T, yaml string, args ...string) *lockedBuffer {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "claimcheck.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, append([]string{"serve", "--config", path, "--data", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0"}, args...), cli.Env{
			Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr,
			Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != cli.ExitOK {
			t.Errorf("serve exited %d:\n%s", code, stderr.String())
		}
	})
	for range 600 {
		if apiLine.MatchString(stderr.String()) {
			return stderr
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited %d before serving:\n%s", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not report its address:\n%s", stderr.String())
	return nil
}

func status(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestMetricsFollowAuth (ADR 0271): with auth on, the API port does not
// answer /metrics without a key (it did, to anyone who could reach the
// port); metrics.listen serves it on an address of its own, and with
// auth off and no metrics.listen the API port serves it as before.
func TestMetricsFollowAuth(t *testing.T) {
	t.Run("auth on", func(t *testing.T) {
		logs := serveInProcess(t, "auth: true\n")
		api := apiLine.FindStringSubmatch(logs.String())[1]
		if code, _ := status(t, api+"/metrics"); code != http.StatusNotFound {
			t.Fatalf("GET /metrics on the API port with auth on: %d, want 404", code)
		}
		if code, _ := status(t, api+"/healthz"); code != http.StatusOK {
			t.Fatalf("GET /healthz: %d", code)
		}
		if !strings.Contains(logs.String(), "set metrics.listen") {
			t.Fatalf("serve did not say where the metrics went:\n%s", logs.String())
		}
	})
	t.Run("auth on, metrics.listen", func(t *testing.T) {
		logs := serveInProcess(t, "auth: true\nmetrics: { listen: 127.0.0.1:0 }\n")
		api := apiLine.FindStringSubmatch(logs.String())[1]
		// The API port answers first: the metrics listener is bound, and
		// its line written, once the keys are read after it.
		if code, _ := status(t, api+"/healthz"); code != http.StatusOK {
			t.Fatalf("GET /healthz: %d", code)
		}
		m := metricsLine.FindStringSubmatch(logs.String())
		if m == nil {
			t.Fatalf("no metrics listener:\n%s", logs.String())
		}
		if code, _ := status(t, api+"/metrics"); code != http.StatusNotFound {
			t.Fatalf("GET /metrics on the API port: %d, want 404", code)
		}
		if code, body := status(t, m[1]); code != http.StatusOK || !strings.Contains(body, "claimcheck_") {
			t.Fatalf("GET %s: %d\n%.300s", m[1], code, body)
		}
	})
	t.Run("auth off", func(t *testing.T) {
		logs := serveInProcess(t, "")
		api := apiLine.FindStringSubmatch(logs.String())[1]
		if code, body := status(t, api+"/metrics"); code != http.StatusOK || !strings.Contains(body, "claimcheck_") {
			t.Fatalf("GET /metrics with auth off: %d", code)
		}
	})
}
