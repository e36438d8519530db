package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/server"
)

// faulty is the real store with Stat failing with err, and Redeem's
// stream breaking after breakAfter bytes with err: fault injection by
// wrapping the interface. The server's redeems in the stored form get
// the same broken stream, as the payload itself (RedeemEncoded).
// The fault is set once the test has put its claim; until then the store
// works.
type faulty struct {
	server.Store
	breakAfter int64

	mu  sync.Mutex
	err error
}

func (f *faulty) wrap(c server.Store) server.Store {
	f.Store = c
	return f
}

func (f *faulty) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *faulty) fault() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *faulty) Stat(ctx context.Context, ref claimcheck.Ref) (claimcheck.ClaimInfo, error) {
	if err := f.fault(); err != nil {
		return claimcheck.ClaimInfo{}, err
	}
	return f.Store.Stat(ctx, ref)
}

func (f *faulty) Redeem(ctx context.Context, ref claimcheck.Ref) (*claimcheck.Payload, error) {
	p, err := f.Store.Redeem(ctx, ref)
	if err != nil || f.fault() == nil {
		return p, err
	}
	return claimcheck.NewPayload(p.Ref, p.ContentType, &breakingBody{ReadCloser: p, left: f.breakAfter, err: f.fault()}), nil
}

// RedeemEncoded answers the payload itself, as Redeem does: an encoding
// of "" tells the server to send it as it is.
func (f *faulty) RedeemEncoded(ctx context.Context, ref claimcheck.Ref, _ string) (*claimcheck.Encoded, error) {
	p, err := f.Redeem(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &claimcheck.Encoded{ReadCloser: p, Ref: p.Ref, ContentType: p.ContentType}, nil
}

type breakingBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *breakingBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// TestErrorMapping sends every sentinel error through the server's error
// writer and the client's decoder: the client must get the same sentinel
// back, with the server's message, the documented status and code.
func TestErrorMapping(t *testing.T) {
	at := t0.Add(time.Minute)
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{claimcheck.ErrNotFound, 404, "not_found"},
		{claimcheck.ErrGone, 410, "gone"},
		{claimcheck.ErrExpired, 410, "expired"},
		{claimcheck.ErrChecksumMismatch, 422, "checksum_mismatch"},
		{claimcheck.ErrQuotaExceeded, 403, "quota_exceeded"},
		{claimcheck.ErrTooLarge, 413, "too_large"},
		{claimcheck.ErrInvalidArgument, 400, "invalid_argument"},
		{claimcheck.ErrUnauthenticated, 401, "unauthenticated"},
		{claimcheck.ErrPermissionDenied, 403, "permission_denied"},
		{claimcheck.ErrUnavailable, 503, "unavailable"},
		{&claimcheck.GoneError{Reason: claimcheck.ReasonDeleted, At: at}, 410, "gone"},
		{&claimcheck.GoneError{Reason: claimcheck.ReasonReleased, At: at}, 410, "gone"},
		{&claimcheck.GoneError{Reason: claimcheck.ReasonReadRetention, At: at}, 410, "gone"},
		{&claimcheck.GoneError{Reason: claimcheck.ReasonNeverConfirmed}, 410, "gone"},
		{&claimcheck.GoneError{Reason: claimcheck.ReasonExpired, At: at}, 410, "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.code+" "+tt.err.Error(), func(t *testing.T) {
			// The store's errors say what was being done.
			f := &faulty{}
			b := setup(t, f.wrap)
			ref := b.put(t, "orders", []byte("payload"), claimcheck.PutOptions{})
			if gone, ok := tt.err.(*claimcheck.GoneError); ok {
				gone.ID = ref.ID
			}
			sent := fmt.Errorf("stat %s: %w", ref.ID, tt.err)
			f.set(sent)

			_, err := b.client.Stat(context.Background(), ref)
			checkMapped(t, err, tt.err, tt.status, tt.code)
			if err.Error() != sent.Error() {
				t.Errorf("message %q, want the server's %q", err, sent)
			}
		})
	}
}

// TestStreamBreaks: a stream the server must break off after sending the
// status line reaches the client through the trailer, with its sentinel.
func TestStreamBreaks(t *testing.T) {
	f := &faulty{breakAfter: 300 << 10}
	b := setup(t, f.wrap)
	data := jsonDoc(1 << 20)
	ref := b.put(t, "raw", data, claimcheck.PutOptions{})
	f.set(fmt.Errorf("redeem %s: %w: object storage went away", ref.ID, claimcheck.ErrUnavailable))

	p, err := b.client.Redeem(context.Background(), ref)
	if err != nil {
		t.Fatalf("redeem must start: %v", err)
	}
	got, err := p.Bytes()
	if got != nil || !errors.Is(err, claimcheck.ErrUnavailable) {
		t.Fatalf("broken stream: %d bytes, %v; want no bytes and ErrUnavailable", len(got), err)
	}
	if !strings.Contains(err.Error(), "object storage went away") {
		t.Errorf("error %q does not carry the server's message", err)
	}
}

func checkMapped(t *testing.T, err, want error, status int, code string) {
	t.Helper()
	var apiErr *client.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %#v is not a *client.Error", err)
	}
	if apiErr.Status != status || apiErr.Code != code {
		t.Errorf("status %d code %q, want %d %q", apiErr.Status, apiErr.Code, status, code)
	}
	wantGone, isGone := want.(*claimcheck.GoneError)
	if !isGone {
		if !errors.Is(err, want) {
			t.Errorf("errors.Is(%v, %v) is false", err, want)
		}
		return
	}
	gone, ok := errors.AsType[*claimcheck.GoneError](err)
	if !ok || *gone != *wantGone {
		t.Fatalf("error %#v, want %#v", err, wantGone)
	}
	if !errors.Is(err, claimcheck.ErrGone) || errors.Is(err, claimcheck.ErrExpired) != (wantGone.Reason == claimcheck.ReasonExpired) {
		t.Errorf("%v: does not match ErrGone/ErrExpired as the store's error would", err)
	}
}

// TestInternalError: an error outside the table is a 500 that names no
// sentinel and does not leak its details.
func TestInternalError(t *testing.T) {
	f := &faulty{}
	b := setup(t, f.wrap)
	ref := b.put(t, "orders", []byte("payload"), claimcheck.PutOptions{})
	f.set(errors.New("pq: password authentication failed for secret"))
	_, err := b.client.Stat(context.Background(), ref)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 500 || apiErr.Code != "internal" || errors.Unwrap(err) != nil {
		t.Fatalf("error %#v, want a bare 500 internal", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("internal details leaked: %q", err)
	}
}

// TestForeignAnswers: answers that are not the server's JSON (a proxy, a
// wrong URL) are not mistaken for claim errors; gateway failures are
// retryable.
func TestForeignAnswers(t *testing.T) {
	tests := []struct {
		status      int
		unavailable bool
	}{
		{http.StatusNotFound, false},
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, true},
		{http.StatusServiceUnavailable, true},
		{http.StatusGatewayTimeout, true},
	}
	for _, tt := range tests {
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>nginx says no</html>", tt.status)
		}))
		c, err := client.New(proxy.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Stat(context.Background(), claimcheck.Ref{ID: "cc_AAAAAAAAAAAAAAAAAAAAAA"})
		proxy.Close()
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Status != tt.status || apiErr.Code != "" {
			t.Errorf("%d: error %#v", tt.status, err)
		}
		if errors.Is(err, claimcheck.ErrNotFound) {
			t.Errorf("%d: a foreign answer was taken for a missing claim", tt.status)
		}
		if errors.Is(err, claimcheck.ErrUnavailable) != tt.unavailable {
			t.Errorf("%d: errors.Is(ErrUnavailable) = %v, want %v", tt.status, !tt.unavailable, tt.unavailable)
		}
		if !strings.Contains(err.Error(), "nginx says no") {
			t.Errorf("%d: error %q does not quote the answer", tt.status, err)
		}
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Policy(context.Background(), "orders"); !errors.Is(err, claimcheck.ErrUnavailable) {
		t.Fatalf("unreachable server: %v, want ErrUnavailable", err)
	}
}

func TestNewValidatesURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://host", "http://", "http://host/?x=1", "http://user:pw@host", "://"} {
		if _, err := client.New(u); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("New(%q): %v, want ErrInvalidArgument", u, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8080", "https://claims.example.com/prefix/"} {
		if _, err := client.New(u); err != nil {
			t.Errorf("New(%q): %v", u, err)
		}
	}
}

func TestAPIKeyAndPrefix(t *testing.T) {
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL+"/claimcheck/", client.WithAPIKey("k3y"), client.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), claimcheck.Ref{ID: "cc_AAAAAAAAAAAAAAAAAAAAAA"}); err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer k3y" || path != "/claimcheck/v1/claims/cc_AAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("sent Authorization %q to %q", auth, path)
	}
}
