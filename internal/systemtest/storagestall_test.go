package systemtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// TestStalledStorageAnswers503 puts the server's S3 storage behind a
// proxy on 127.0.0.1 that, once stalled, still accepts connections and
// reads every byte but never forwards or answers one: what a MinIO that
// lost its write quorum does to a put. A put must then answer 503 with
// Retry-After naming storage_timeout, rather than hang (ADR 0289); the
// HTTP client's own timeout is only the guard that turns a hang into a
// failure. Nothing stalled is acknowledged and no quota stays reserved;
// once the proxy forwards again, puts work and every acknowledged put
// redeems its bytes.
func TestStalledStorageAnswers503(t *testing.T) {
	storage, _, _ := testsvc.S3(t)
	proxied, proxy := stallingProxy(t, storage)
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claimcheck.yaml")
	yaml := fmt.Sprintf("metadata: %q\nstorage: %q\nstorage_timeout: 2s\nsweeper: { interval: 100ms }\n",
		"sqlite:"+filepath.Join(dir, "meta.db"), proxied)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, bin, cfg)
	hist := recordHistory(t, "storage-stall")
	rec := hist.rec.With(r.client)
	ctx := context.Background()

	acked := map[claimcheck.Ref][]byte{}
	for i := range 3 {
		body := bytes.Repeat([]byte{byte('a' + i)}, 256<<10)
		ref, err := rec.Put(ctx, "stall", body, claimcheck.PutOptions{})
		if err != nil {
			t.Fatalf("put %d before the stall: %v", i, err)
		}
		acked[ref] = body
	}
	before, err := rec.Usage(ctx, "stall")
	if err != nil {
		t.Fatal(err)
	}

	proxy.stall(true)
	began := time.Now()
	status, header, text := rawPut(t, r.url, bytes.Repeat([]byte("s"), 256<<10))
	t.Logf("put with storage stalled: %d after %s (storage_timeout 2s)", status, time.Since(began).Round(time.Millisecond))
	if status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" || !strings.Contains(text, "storage_timeout") {
		t.Errorf("put with storage stalled = %d, Retry-After %q, %s; want 503 with Retry-After naming storage_timeout", status, header.Get("Retry-After"), text)
	}
	proxy.stall(false)

	// The refused put holds no quota once the sweeper has reaped its
	// pending claim: usage is what the acknowledged puts hold.
	waitUsage(t, rec, "stall", before)
	if _, err := rec.Put(ctx, "stall", bytes.Repeat([]byte("z"), 256<<10), claimcheck.PutOptions{}); err != nil {
		t.Fatalf("put after the stall: %v", err)
	}
	for ref, want := range acked {
		if got := redeemAll(t, r.client, ref); !bytes.Equal(got, want) {
			t.Errorf("redeem %s after the stall: %d bytes, want the %d acknowledged", ref.ID, len(got), len(want))
		}
	}
	hist.check(t)
}

// usageReader is the part of a client waitUsage needs.
type usageReader interface {
	Usage(ctx context.Context, ns string) (claimcheck.NamespaceUsage, error)
}

// waitUsage waits until ns has want's used bytes and active claims and
// nothing pending or reserved: a refused put's reservation returns when
// its pending claim is reaped, on the sweeper's schedule.
func waitUsage(t *testing.T, c usageReader, ns string, want claimcheck.NamespaceUsage) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		u, err := c.Usage(context.Background(), ns)
		if err == nil && u.UsedBytes == want.UsedBytes && u.ActiveClaims == want.ActiveClaims && u.ReservedBytes == 0 && u.PendingClaims == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage of %s = %+v (%v); want used %d in %d claims, nothing reserved or pending", ns, u, err, want.UsedBytes, want.ActiveClaims)
		}
		time.Sleep(100 * time.Millisecond) // polling the sweeper's reaping
	}
}

// tcpProxy forwards connections from a loopback port to one target
// address; stalled, it reads and drops what either side sends and
// forwards nothing, on the connections it has and the ones it accepts.
type tcpProxy struct {
	ln      net.Listener
	target  string
	stalled atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
}

// stallingProxy starts a proxy to the endpoint of the s3:// URL storage
// and returns the URL with the proxy as its endpoint.
func stallingProxy(t *testing.T, storage string) (string, *tcpProxy) {
	t.Helper()
	u, err := url.Parse(storage)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	ep, err := url.Parse(q.Get("endpoint"))
	if err != nil || ep.Host == "" {
		t.Fatalf("storage URL %s has no endpoint to proxy", storage)
	}
	p := newTCPProxy(t, "127.0.0.1:0", ep.Host)
	ep.Host = p.ln.Addr().String()
	q.Set("endpoint", ep.String())
	u.RawQuery = q.Encode()
	return u.String(), p
}

// newTCPProxy listens on listen and forwards to target until the test
// ends.
func newTCPProxy(t *testing.T, listen, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) stall(on bool) { p.stalled.Store(on) }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies from src to dst while the proxy is not stalled, and
// drops what src sends while it is.
func (p *tcpProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.stalled.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // the end of either side ends both
		}
	}
}

func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}
