package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/server"
)

// countingListener counts the bytes the server receives, on the wire.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestDigestFirstSkipsUpload: the client hashes an in-memory body itself
// and sends the digest first; on a dedup hit the server answers 201
// before asking for the body (Expect: 100-continue), so the megabyte never
// crosses the wire a second time.
func TestDigestFirstSkipsUpload(t *testing.T) {
	b := setup(t)
	var received atomic.Int64
	ts := httptest.NewUnstartedServer(server.New(server.Config{Claims: b.store, Ready: b.store.Ready}))
	ts.Listener = countingListener{ts.Listener, &received}
	ts.Start()
	defer ts.Close()
	c, err := client.New(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := randomBytes(t, 1<<20)

	first, err := c.Put(ctx, "raw", bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := received.Load(); got < 1<<20 {
		t.Fatalf("first put: server received %d bytes, want the whole payload", got)
	}
	received.Store(0)
	body := bytes.NewReader(data)
	second, err := c.Put(ctx, "raw", body, claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := received.Load(); got > 16<<10 {
		t.Errorf("dedup hit: server received %d bytes, want headers only", got)
	}
	if body.Len() != len(data) {
		t.Errorf("the client consumed %d bytes of the caller's reader", len(data)-body.Len())
	}
	if second.ID == first.ID || second.Digest != first.Digest || second.Size != int64(len(data)) {
		t.Errorf("second ref = %+v, want a new claim with the same digest", second)
	}
	p, err := c.Redeem(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Bytes()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem of the deduplicated claim: %d bytes, %v", len(got), err)
	}
	// Both claims share one blob.
	c1, _ := b.meta.Claim(ctx, first.ID)
	c2, _ := b.meta.Claim(ctx, second.ID)
	if c1.BlobID != c2.BlobID {
		t.Errorf("claims point at blobs %s and %s, want one shared blob", c1.BlobID, c2.BlobID)
	}

	// A *bytes.Buffer and a *strings.Reader get the same treatment; a
	// reader the client cannot hash without consuming is streamed.
	received.Store(0)
	if _, err := c.Put(ctx, "raw", bytes.NewBuffer(append([]byte(nil), data...)), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := received.Load(); got > 16<<10 {
		t.Errorf("dedup hit from a bytes.Buffer: server received %d bytes", got)
	}
	received.Store(0)
	if _, err := c.Put(ctx, "raw", struct{ *bytes.Reader }{bytes.NewReader(data)}, claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := received.Load(); got < 1<<20 {
		t.Errorf("opaque reader: server received %d bytes, want the whole payload", got)
	}

	// A reader the caller already read from: the digest is of the unread
	// bytes, and those are what is sent and stored.
	part := bytes.NewReader(data)
	if _, err := part.Seek(100, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	ref, err := c.Put(ctx, "raw", part, claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data[100:]); ref.Size != int64(len(data)-100) || ref.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("a reader 100 bytes in: ref %+v, want the %d unread bytes", ref, len(data)-100)
	}
	if p, err := c.Redeem(ctx, ref); err != nil {
		t.Fatal(err)
	} else if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data[100:]) {
		t.Fatalf("redeem of the unread bytes: %d bytes, %v", len(got), err)
	}
}
