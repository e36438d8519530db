package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
)

// TestTimeoutConformance runs the suite through WithTimeout: the bound
// changes nothing a caller of a storage that answers can see.
func TestTimeoutConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return blob.WithTimeout(blobtest.Open(t, "mem://"), time.Minute)
	})
}

// stallingStore is a store whose calls, while stalled, wait for their
// context and nothing else (a storage that accepted the request and
// never answers), and whose writes and reads otherwise take pause
// each (a slow link that keeps moving).
type stallingStore struct {
	blob.Store
	stalled atomic.Bool
	pause   time.Duration
}

func (s *stallingStore) wait(ctx context.Context) error {
	if s.stalled.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case <-time.After(s.pause):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *stallingStore) Attributes(ctx context.Context, key string) (blob.Attributes, error) {
	if err := s.wait(ctx); err != nil {
		return blob.Attributes{}, err
	}
	return s.Store.Attributes(ctx, key)
}

func (s *stallingStore) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	w, err := s.Store.NewWriter(ctx, key)
	return &stallingWriter{WriteCloser: w, s: s, ctx: ctx}, err
}

func (s *stallingStore) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := s.Store.NewReader(ctx, key)
	return &stallingReader{ReadCloser: r, s: s, ctx: ctx}, err
}

type stallingWriter struct {
	io.WriteCloser
	s   *stallingStore
	ctx context.Context
}

func (w *stallingWriter) Write(p []byte) (int, error) {
	if err := w.s.wait(w.ctx); err != nil {
		return 0, err
	}
	return w.WriteCloser.Write(p)
}

type stallingReader struct {
	io.ReadCloser
	s   *stallingStore
	ctx context.Context
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if err := r.s.wait(r.ctx); err != nil {
		return 0, err
	}
	return r.ReadCloser.Read(p[:min(len(p), 1024)])
}

// TestTimeoutIsIdleNotTotal writes and reads an object whose every
// piece takes a fifth of the bound: the whole stream takes several
// bounds and must still succeed, because it never stops moving.
func TestTimeoutIsIdleNotTotal(t *testing.T) {
	const idle = 250 * time.Millisecond
	under := &stallingStore{Store: blobtest.Open(t, "mem://"), pause: idle / 5}
	s := blob.WithTimeout(under, idle)
	ctx := context.Background()
	payload := bytes.Repeat([]byte("x"), 20*1024)

	w, err := s.NewWriter(ctx, "ns/slow")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(payload); i += 1024 {
		if _, err := w.Write(payload[i : i+1024]); err != nil {
			t.Fatalf("write %d of a slow but moving stream: %v", i/1024, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close of a slow but moving stream: %v", err)
	}
	r, err := s.NewReader(ctx, "ns/slow")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read of a slow but moving stream: %d bytes, %v", len(got), err)
	}
}

// TestTimeoutEndsStalledCalls stalls the storage: a call on it, one
// request or a stream, must fail with a NoProgressError that names
// storage_timeout and reads as unavailable (never as damage), rather
// than wait for ever. Without the bound each call here would wait for
// the test's own deadline.
func TestTimeoutEndsStalledCalls(t *testing.T) {
	const idle = 100 * time.Millisecond
	under := &stallingStore{Store: blobtest.Open(t, "mem://")}
	s := blob.WithTimeout(under, idle)
	ctx := context.Background()
	w, err := s.NewWriter(ctx, "ns/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	under.stalled.Store(true)

	check := func(what string, err error) {
		t.Helper()
		var np *blob.NoProgressError
		if !errors.As(err, &np) || !strings.Contains(err.Error(), blob.TimeoutSetting) {
			t.Errorf("%s on a stalled storage: %v; want a NoProgressError naming %s", what, err, blob.TimeoutSetting)
		}
		if f := blob.FaultOf(err); f != blob.FaultUnavailable {
			t.Errorf("%s: FaultOf = %s, want unavailable", what, f)
		}
	}
	_, err = s.Attributes(ctx, "ns/a")
	check("attributes", err)

	w, err = s.NewWriter(ctx, "ns/b")
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Write([]byte("def"))
	check("write", err)
	_ = w.Close()

	r, err := s.NewReader(ctx, "ns/a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	check("read", err)
	_ = r.Close()

	// A caller that goes away first stays a cancellation.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Attributes(cctx, "ns/a"); !errors.Is(err, context.Canceled) || errors.As(err, new(*blob.NoProgressError)) {
		t.Errorf("attributes with the caller gone: %v; want the cancellation", err)
	}
}

// TestTimeoutCarriesAbilities: the bounded store has exactly the
// abilities of the store it wraps.
func TestTimeoutCarriesAbilities(t *testing.T) {
	under := blobtest.Open(t, "mem://")
	got, want := blob.AbilitiesOf(blob.WithTimeout(under, time.Minute)), blob.AbilitiesOf(under)
	if (got.BatchDeleter == nil) != (want.BatchDeleter == nil) || (got.Presigner == nil) != (want.Presigner == nil) ||
		(got.Lifecycler == nil) != (want.Lifecycler == nil) || (got.Appender == nil) != (want.Appender == nil) ||
		(got.CORSConfigurer == nil) != (want.CORSConfigurer == nil) {
		t.Errorf("abilities through WithTimeout = %+v, want those of %+v", got, want)
	}
}
