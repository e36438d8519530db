package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/memstore"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

// hangingStore is a store whose reads and writes, once hung, wait for
// their context and nothing else: a storage that accepted the request
// and never answers it.
type hangingStore struct {
	blob.Store
	hung atomic.Bool
}

func (h *hangingStore) wait(ctx context.Context) error {
	if !h.hung.Load() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (h *hangingStore) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return h.Store.NewReader(ctx, key)
}

func (h *hangingStore) NewRangeReader(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return h.Store.NewRangeReader(ctx, key, off, n)
}

func (h *hangingStore) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return h.Store.NewWriter(ctx, key)
}

// TestStorageTimeoutAnswersUnavailable: with the storage hung, a put, a
// redeem and a ranged redeem each end after storage_timeout as
// unavailable naming the setting (the server's 503), and the stored
// blob is not marked damaged: a later redeem with the storage back
// returns its bytes. A stalled open of an object once ended as a bare
// cancellation, which the server answered 500.
func TestStorageTimeoutAnswersUnavailable(t *testing.T) {
	hs := &hangingStore{Store: memstore.New()}
	s := enginetest.Open(t, engine.Config{BlobStore: hs, StorageTimeout: 100 * time.Millisecond,
		Defaults: engine.Defaults{Policy: claimcheck.Policy{Threshold: 1}}})
	ctx := context.Background()
	body := bytes.Repeat([]byte("stored "), 10_000)
	ref, err := s.Put(ctx, "ns", bytes.NewReader(body), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hs.hung.Store(true)
	unavailable := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, claimcheck.ErrUnavailable) || !strings.Contains(err.Error(), blob.TimeoutSetting) {
			t.Errorf("%s with the storage hung: %v; want unavailable naming %s", what, err, blob.TimeoutSetting)
		}
	}
	_, err = s.Put(ctx, "ns", bytes.NewReader([]byte("more than one byte")), claimcheck.PutOptions{})
	unavailable("put", err)
	_, err = s.Redeem(ctx, ref)
	unavailable("redeem", err)
	_, err = s.RedeemRange(ctx, ref, 10, 100)
	unavailable("ranged redeem", err)

	hs.hung.Store(false)
	p, err := s.Redeem(ctx, ref)
	if err != nil {
		t.Fatalf("redeem with the storage back: %v", err)
	}
	got, err := io.ReadAll(p)
	_ = p.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("redeem with the storage back: %d bytes, %v", len(got), err)
	}
}
