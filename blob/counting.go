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

// Counting wraps a Store and counts requests by kind. Benchmarks and tests
// use it to prove request budgets ("at most one delete per blob, zero
// listings") without touching the backend.
type Counting struct {
	next      Store
	abilities Abilities

	writes, reads, attrs, deletes, batches, batchKeys, lists atomic.Int64
}

// countingBatch counts the batch deletes of a Counting.
type countingBatch struct {
	c  *Counting
	bd BatchDeleter
}

var (
	_ Store        = (*Counting)(nil)
	_ BatchDeleter = countingBatch{}
)

// NewCounting wraps next and returns the store to use, which carries
// exactly the optional abilities of next (AbilitiesOf sees through the
// wrapper), and the counter to read; both are the same *Counting. Batch
// deletes are counted; presigning, lifecycle, append and CORS calls pass
// through uncounted.
func NewCounting(next Store) (Store, *Counting) {
	c := &Counting{next: next}
	c.abilities = AbilitiesOf(next)
	if bd := c.abilities.BatchDeleter; bd != nil {
		c.abilities.BatchDeleter = countingBatch{c, bd}
	}
	return c, c
}

// Abilities returns the optional abilities of the wrapped store, batch
// deletes counted.
func (c *Counting) Abilities() Abilities { return c.abilities }

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

// NewRangeReader implements Store; a range read counts as a read.
func (c *Counting) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	c.reads.Add(1)
	return c.next.NewRangeReader(ctx, key, offset, length)
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
