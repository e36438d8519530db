package blobtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/claimcheck/claimcheck/blob"
)

// Faults wraps a store and makes chosen requests fail the way a storage
// service does, for the tests of what claimcheck makes of storage errors
// (ADR 0255): an object whose every read answers an HTTP status (a
// MinIO object whose metadata file was cut answers 500), or the whole
// service refusing connections. Everything else passes through.
type Faults struct {
	blob.Store
	mu      sync.Mutex
	objects map[string]int
	down    bool
}

// NewFaults wraps s; nothing fails until told.
func NewFaults(s blob.Store) *Faults {
	return &Faults{Store: s, objects: map[string]int{}}
}

// FailObject makes every read and Attributes call about key answer
// status (0 heals it).
func (f *Faults) FailObject(key string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if status == 0 {
		delete(f.objects, key)
		return
	}
	f.objects[key] = status
}

// SetDown makes every request fail as a refused connection (an outage).
func (f *Faults) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *Faults) fail(op, key string, reads bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return fmt.Errorf("blob: %s %s: %w", op, key, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	if st, ok := f.objects[key]; ok && reads {
		return fmt.Errorf("blob: %s %s: %w", op, key, &blob.StatusError{Status: st, Err: fmt.Errorf("injected fault")})
	}
	return nil
}

// NewReader implements blob.Store.
func (f *Faults) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := f.fail("read", key, true); err != nil {
		return nil, err
	}
	return f.Store.NewReader(ctx, key)
}

// NewRangeReader implements blob.Store.
func (f *Faults) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := f.fail("read", key, true); err != nil {
		return nil, err
	}
	return f.Store.NewRangeReader(ctx, key, offset, length)
}

// Attributes implements blob.Store.
func (f *Faults) Attributes(ctx context.Context, key string) (blob.Attributes, error) {
	if err := f.fail("attributes", key, true); err != nil {
		return blob.Attributes{}, err
	}
	return f.Store.Attributes(ctx, key)
}

// NewWriter implements blob.Store.
func (f *Faults) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	if err := f.fail("write", key, false); err != nil {
		return nil, err
	}
	return f.Store.NewWriter(ctx, key)
}

// Delete implements blob.Store.
func (f *Faults) Delete(ctx context.Context, key string) error {
	if err := f.fail("delete", key, false); err != nil {
		return err
	}
	return f.Store.Delete(ctx, key)
}

// List implements blob.Store.
func (f *Faults) List(ctx context.Context, prefix, token string, pageSize int) ([]blob.Object, string, error) {
	if err := f.fail("list", prefix, false); err != nil {
		return nil, "", err
	}
	return f.Store.List(ctx, prefix, token, pageSize)
}
