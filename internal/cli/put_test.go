package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/cli"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/sweep"
)

// wireCounter counts the bytes a server receives on its connections.
type wireCounter struct {
	net.Listener
	n *atomic.Int64
}

func (l wireCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return countedConn{c, l.n}, err
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestPutFileSendsDigestFirst: `claimcheck put FILE` hashes the file
// before it sends anything, so putting the same file again costs headers
// only (the server answers the dedup hit before the body), and the store
// keeps one object.
func TestPutFileSendsDigestFirst(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	store := enginetest.Open(t, engine.Config{Data: dir, Sweeper: sweep.Config{Disabled: true}, Logger: slog.New(slog.DiscardHandler),
		Namespaces: map[string]claimcheck.Policy{"raw": {Compression: claimcheck.CompressionNone}}})
	var received atomic.Int64
	srv := httptest.NewUnstartedServer(server.New(server.Config{Claims: store}))
	srv.Listener = wireCounter{srv.Listener, &received}
	srv.Start()
	defer srv.Close()

	data := make([]byte, 2<<20)
	rand.Read(data)
	file := filepath.Join(dir, "payload.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	put := func() claimcheck.Ref {
		t.Helper()
		var out, errb bytes.Buffer
		code := cli.Main(ctx, []string{"put", "--server", srv.URL, "--ns", "raw", file}, cli.Env{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		})
		if code != cli.ExitOK {
			t.Fatalf("put exited %d: %s", code, errb.String())
		}
		ref, err := claimcheck.ParseRef(out.Bytes())
		if err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		return ref
	}
	first := put()
	if got := received.Load(); got < int64(len(data)) {
		t.Fatalf("first put: the server received %d bytes, want the whole file", got)
	}
	received.Store(0)
	second := put()
	if got := received.Load(); got > 16<<10 {
		t.Errorf("second put of the same file: the server received %d bytes, want headers only", got)
	}
	if second.ID == first.ID || second.Digest != first.Digest || second.Digest != claimcheck.DigestOf(data) {
		t.Errorf("refs %+v and %+v, want two claims of the file's digest", first, second)
	}
	var objects int
	if err := filepath.WalkDir(filepath.Join(dir, "blobs"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !blob.IsOwnerMarker(d.Name()) {
			objects++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if objects != 1 {
		t.Errorf("%d objects after two puts of one file, want 1", objects)
	}
	p, err := store.Redeem(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem of the second claim: %d bytes, %v", len(got), err)
	}
}
