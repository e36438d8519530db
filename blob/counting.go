package blob

import (
	"context"
	"io"
	"sync/atomic"
)

// Counts is a snapshot of the requests a Counting store has passed on.
// Every call counts once when it is made, whether or not it succeeds.
type Counts struct {
	Writes       int64 // NewWriter calls
	Reads        int64 // NewReader calls
	Attributes   int64
	Deletes      int64 // single-object Delete calls
	BatchDeletes int64 // DeleteMany calls
	BatchKeys    int64 // keys passed to DeleteMany
	Lists        int64 // List calls (pages)
}

// CountingStore is a Store that reports the requests made through it.
type CountingStore interface {
	Store
	Counts() Counts
}

// Counting wraps a Store and counts requests by kind. Benchmarks and tests
// use it to prove request budgets ("at most one delete per blob, zero
// listings") without touching the backend.
type Counting struct {
	next Store

	writes, reads, attrs, deletes, batches, batchKeys, lists atomic.Int64
}

// countingBatch counts the batch deletes of a Counting.
type countingBatch struct {
	c  *Counting
	bd BatchDeleter
}

var (
	_ CountingStore = (*Counting)(nil)
	_ BatchDeleter  = countingBatch{}
)

// NewCounting wraps next. The result has exactly the optional abilities
// of next, so the engine's type assertions see through the wrapper; that
// is why it returns an interface and not *Counting. Batch deletes are
// counted; presigning and lifecycle calls pass through uncounted.
func NewCounting(next Store) CountingStore {
	c := &Counting{next: next}
	a := abilitiesOf(next)
	if a.bd != nil {
		a.bd = countingBatch{c, a.bd}
	}
	// expose would hide Counts behind its Store field, so the same
	// combinations are spelled out here with *Counting embedded.
	bd, ps, lc := a.bd != nil, a.ps != nil, a.lc != nil
	switch {
	case bd && ps && lc:
		return struct {
			*Counting
			BatchDeleter
			Presigner
			Lifecycler
		}{c, a.bd, a.ps, a.lc}
	case bd && ps:
		return struct {
			*Counting
			BatchDeleter
			Presigner
		}{c, a.bd, a.ps}
	case bd && lc:
		return struct {
			*Counting
			BatchDeleter
			Lifecycler
		}{c, a.bd, a.lc}
	case ps && lc:
		return struct {
			*Counting
			Presigner
			Lifecycler
		}{c, a.ps, a.lc}
	case bd:
		return struct {
			*Counting
			BatchDeleter
		}{c, a.bd}
	case ps:
		return struct {
			*Counting
			Presigner
		}{c, a.ps}
	case lc:
		return struct {
			*Counting
			Lifecycler
		}{c, a.lc}
	default:
		return c
	}
}

// Counts returns a snapshot. The counters are read one by one, so a
// snapshot taken while requests are in flight need not be consistent
// across kinds.
func (c *Counting) Counts() Counts {
	return Counts{
		Writes:       c.writes.Load(),
		Reads:        c.reads.Load(),
		Attributes:   c.attrs.Load(),
		Deletes:      c.deletes.Load(),
		BatchDeletes: c.batches.Load(),
		BatchKeys:    c.batchKeys.Load(),
		Lists:        c.lists.Load(),
	}
}

// NewWriter implements Store.
func (c *Counting) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	c.writes.Add(1)
	return c.next.NewWriter(ctx, key)
}

// NewReader implements Store.
func (c *Counting) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	c.reads.Add(1)
	return c.next.NewReader(ctx, key)
}

// Attributes implements Store.
func (c *Counting) Attributes(ctx context.Context, key string) (Attributes, error) {
	c.attrs.Add(1)
	return c.next.Attributes(ctx, key)
}

// Delete implements Store.
func (c *Counting) Delete(ctx context.Context, key string) error {
	c.deletes.Add(1)
	return c.next.Delete(ctx, key)
}

// List implements Store.
func (c *Counting) List(ctx context.Context, prefix, token string, pageSize int) ([]Object, string, error) {
	c.lists.Add(1)
	return c.next.List(ctx, prefix, token, pageSize)
}

// Close implements Store. It closes the wrapped store.
func (c *Counting) Close() error { return c.next.Close() }

// DeleteMany implements BatchDeleter.
func (b countingBatch) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	b.c.batches.Add(1)
	b.c.batchKeys.Add(int64(len(keys)))
	return b.bd.DeleteMany(ctx, keys)
}

// MaxBatch implements BatchDeleter.
func (b countingBatch) MaxBatch() int { return b.bd.MaxBatch() }
