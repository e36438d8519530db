package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/server/api"
)

// untouchedBody is a request body that must never be read: Read records
// the attempt and then blocks until the request is cancelled.
type untouchedBody struct {
	read chan struct{}
	ctx  context.Context
}

func (b *untouchedBody) Read([]byte) (int, error) {
	select {
	case <-b.read:
	default:
		close(b.read)
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

// TestExpectContinueAnsweredWithoutBody: a client that sends
// "Expect: 100-continue" waits for the server before it sends the body.
// A put the server can answer without the body (a digest-first dedup hit,
// or a refusal) must be answered while the client waits, with the body
// never asked for. The transport here waits an hour for a 100 Continue
// that a correct server never sends, so a server that reads the body
// before answering leaves the request hanging until the test's context
// ends, and the test fails; nothing here measures how long it took.
// ReadTimeout is on, as in `claimcheck serve` (its body wrapper once hid
// the waiting client from net/http), and longer than the test's context,
// so that a server waiting for the body cannot be rescued by its own read
// deadline.
func TestExpectContinueAnsweredWithoutBody(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(dir, "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	store := enginetest.Open(t, engine.Config{Data: dir, MetaStore: m, Logger: slog.New(slog.DiscardHandler),
		Namespaces: map[string]claimcheck.Policy{"raw": {Compression: claimcheck.CompressionNone, MaxSize: 2 << 20}}})
	ts := httptest.NewServer(server.New(server.Config{Claims: store,
		Limits: server.Limits{ReadTimeout: claimcheck.Duration(time.Hour), WriteTimeout: claimcheck.Duration(time.Hour)}}))
	t.Cleanup(ts.Close)

	data := make([]byte, 1<<20)
	rand.Read(data)
	resp, err := http.DefaultClient.Do(mustRequest(t, ctx, ts.URL, data, "", http.NoBody, len(data)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("first put: %s", resp.Status)
	}

	tr := &http.Transport{ExpectContinueTimeout: time.Hour}
	t.Cleanup(tr.CloseIdleConnections)
	for _, tc := range []struct {
		name, digest string
		size         int
		status       int
		code         string
	}{
		{name: "dedup hit", digest: claimcheck.DigestOf(data), size: len(data), status: http.StatusCreated},
		{name: "too large", digest: claimcheck.DigestOf(data), size: 3 << 20, status: http.StatusRequestEntityTooLarge, code: api.CodeTooLarge},
		{name: "bad digest header", digest: "md5:x", size: len(data), status: http.StatusBadRequest, code: api.CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			body := &untouchedBody{read: make(chan struct{}), ctx: rctx}
			resp, err := (&http.Client{Transport: tr}).Do(mustRequest(t, rctx, ts.URL, nil, tc.digest, body, tc.size))
			if err != nil {
				t.Fatalf("the server did not answer while the client waited for 100 Continue: %v", err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %s (%s), want %d", resp.Status, raw, tc.status)
			}
			select {
			case <-body.read:
				t.Error("the transport sent the body: the server asked for it")
			default:
			}
			if tc.code != "" {
				var e api.Error
				if err := json.Unmarshal(raw, &e); err != nil || e.Code != tc.code {
					t.Errorf("error body %s, want code %s", raw, tc.code)
				}
				return
			}
			var ref claimcheck.Ref
			if err := json.Unmarshal(raw, &ref); err != nil || ref.Digest != tc.digest || ref.Size != int64(len(data)) {
				t.Errorf("ref %s (%v), want the digest and size of the payload", raw, err)
			}
		})
	}
}

// mustRequest builds a put of data (or of body with the given length) to
// namespace raw, sending digest first when it is set.
func mustRequest(t *testing.T, ctx context.Context, base string, data []byte, digest string, body io.Reader, size int) *http.Request {
	t.Helper()
	if data != nil {
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/v1/namespaces/raw/claims", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(size)
	req.Header.Set("Content-Length", strconv.Itoa(size))
	if digest != "" {
		req.Header.Set(api.HeaderDigest, digest)
		req.Header.Set("Expect", "100-continue")
	}
	return req
}
