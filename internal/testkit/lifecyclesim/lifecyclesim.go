// Package lifecyclesim is an in-memory bucket with lifecycle rules, for
// tests of the safety net (internal/bucketsetup) and of the engine's
// dedup bound: its objects' ages come from a fake clock, so a test can
// run the bucket's expiration pass at any simulated time.
package lifecyclesim

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/memstore"
	"github.com/claimcheck/claimcheck/clock"
)

// Bucket is an in-memory store with lifecycle rules (a blob.Lifecycler).
type Bucket struct {
	blob.Store
	Clock *clock.Fake

	mu      sync.Mutex
	rules   []blob.LifecycleRule
	written map[string]time.Time // key → write time (fake clock)
	puts    int                  // PutLifecycleRules calls
}

var _ blob.Lifecycler = (*Bucket)(nil)

// New returns an empty bucket with rules, closed when the test ends.
func New(t testing.TB, fc *clock.Fake, rules ...blob.LifecycleRule) *Bucket {
	t.Helper()
	mem := memstore.New()
	t.Cleanup(func() { _ = mem.Close() }) // a memory store: nothing to lose
	return &Bucket{Store: mem, Clock: fc, rules: rules, written: map[string]time.Time{}}
}

// LifecycleRules implements blob.Lifecycler.
func (b *Bucket) LifecycleRules(context.Context) ([]blob.LifecycleRule, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.rules), nil
}

// PutLifecycleRules implements blob.Lifecycler.
func (b *Bucket) PutLifecycleRules(_ context.Context, rules []blob.LifecycleRule) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rules = slices.Clone(rules)
	b.puts++
	return nil
}

// Puts is the number of PutLifecycleRules calls so far.
func (b *Bucket) Puts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.puts
}

// Written is the number of objects written and not expired.
func (b *Bucket) Written() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.written)
}

// NewWriter implements blob.Store, noting the object's write time.
func (b *Bucket) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	w, err := b.Store.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	return &writer{WriteCloser: w, b: b, key: key}, nil
}

type writer struct {
	io.WriteCloser
	b   *Bucket
	key string
}

func (w *writer) Close() error {
	if err := w.WriteCloser.Close(); err != nil {
		return err
	}
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	w.b.written[w.key] = w.b.Clock.Now()
	return nil
}

// Expire is the bucket's lifecycle pass, at its strictest: every object
// at least as old as the shortest rule covering it is deleted (S3 waits
// for the next midnight after that). It returns the keys deleted.
func (b *Bucket) Expire(t testing.TB) []string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.Clock.Now()
	var gone []string
	for key, at := range b.written {
		for _, r := range b.rules {
			if r.ExpireDays > 0 && strings.HasPrefix(key, r.Prefix) && !now.Before(at.Add(time.Duration(r.ExpireDays)*24*time.Hour)) {
				if err := b.Store.Delete(context.Background(), key); err != nil {
					t.Fatal(err)
				}
				delete(b.written, key)
				gone = append(gone, key)
				break
			}
		}
	}
	return gone
}
