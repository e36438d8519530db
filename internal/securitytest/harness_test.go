package securitytest

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/internal/testkit/servetest"
)

// baseConfig is the configuration every attack meets: auth on, two
// tenants, a namespace each.
const baseConfig = `
auth: true
tenants: { acme: {}, beta: {} }
namespaces:
  orders: { tenant: acme }
  billing: { tenant: beta }
`

// fleet is a data directory, its config and the binary serving it.
type fleet struct {
	bin, dir, cfg string
}

// newFleet writes baseConfig plus extra to a fresh directory.
func newFleet(t *testing.T, extra string) *fleet {
	t.Helper()
	f := &fleet{bin: servetest.Build(t), dir: t.TempDir()}
	f.cfg = filepath.Join(f.dir, "claimcheck.yaml")
	f.writeConfig(t, extra)
	return f
}

func (f *fleet) writeConfig(t *testing.T, extra string) {
	t.Helper()
	if err := os.WriteFile(f.cfg, []byte(baseConfig+extra), 0o600); err != nil {
		t.Fatal(err)
	}
}

// key makes an API key offline, as an operator bootstraps one.
func (f *fleet) key(t *testing.T, tenant, role string) string {
	t.Helper()
	r := servetest.Run(t, f.bin, f.dir, "keys", "create", "--config", f.cfg, "--data", f.dir, "--tenant", tenant, "--role", role)
	if r.Code != 0 {
		t.Fatalf("keys create: exit %d: %s", r.Code, r.Stderr)
	}
	return strings.TrimSpace(r.Stdout)
}

// serve starts `serve` on the fleet's config and data.
func (f *fleet) serve(t *testing.T) *servetest.Server {
	t.Helper()
	s := servetest.Start(t, f.bin, f.dir, "--config", f.cfg, "--data", f.dir)
	if s.URL == "" {
		t.Fatalf("serve refused to start:\n%s", s.Logs())
	}
	return s
}

// answer is a response's status and body.
type answer struct {
	Status int
	Body   string
}

// call sends one request with the key (none when empty) and a JSON body
// (none when nil).
func call(t *testing.T, method, url, key string, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b)}
}

// trap is a loopback listener no attack may reach: it counts every
// request it gets.
type trap struct {
	URL  string
	hits atomic.Int64
}

func newTrap(t *testing.T) *trap {
	t.Helper()
	tr := &trap{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tr.hits.Add(1)
	}), ReadHeaderTimeout: 5 * time.Second}
	ln := listenLoopback(t)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	tr.URL = "http://" + ln.Addr().String()
	return tr
}

// servetestStart starts serve on the fleet whether or not it starts.
func servetestStart(t *testing.T, f *fleet) *servetest.Server {
	t.Helper()
	return servetest.Start(t, f.bin, f.dir, "--config", f.cfg, "--data", f.dir)
}

// listenLoopback is a listener on a free port of 127.0.0.1.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
