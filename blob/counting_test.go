package blob_test

import (
	"context"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
)

// batchStore gives a mem store a BatchDeleter, to check that Counting
// passes the ability through.
type batchStore struct{ blob.Store }

func (b batchStore) MaxBatch() int { return 10 }

func (b batchStore) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	for _, k := range keys {
		if err := b.Delete(ctx, k); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func TestCountingCounts(t *testing.T) {
	ctx := t.Context()
	c, counts := blob.NewCounting(blobtest.Open(t, "mem://"))
	defer c.Close()
	if blob.AbilitiesOf(c).BatchDeleter != nil {
		t.Error("Counting over a store without batch deletes claims to have them")
	}

	blobtest.Put(t, c, "ns/a", "1")
	blobtest.Put(t, c, "ns/b", "2")
	r, err := c.NewReader(ctx, "ns/a")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	_, _ = c.NewReader(ctx, "ns/missing") // failures count too
	_, _ = c.Attributes(ctx, "ns/a")
	_ = c.Delete(ctx, "ns/a")
	_, _, _ = c.List(ctx, "ns/", "", 10)

	want := blob.Counts{Writes: 2, Reads: 2, Attributes: 1, Deletes: 1, Lists: 1}
	if got := counts.Counts(); got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
}

func TestCountingBatch(t *testing.T) {
	ctx := t.Context()
	c, counts := blob.NewCounting(batchStore{blobtest.Open(t, "mem://")})
	defer c.Close()
	bd := blob.AbilitiesOf(c).BatchDeleter
	if bd == nil {
		t.Fatal("Counting over a BatchDeleter hides DeleteMany")
	}
	if bd.MaxBatch() != 10 {
		t.Errorf("MaxBatch = %d, want the wrapped store's 10", bd.MaxBatch())
	}
	blobtest.Put(t, c, "ns/a", "1")
	blobtest.Put(t, c, "ns/b", "2")
	if failed, err := bd.DeleteMany(ctx, []string{"ns/a", "ns/b", "ns/c"}); err != nil || len(failed) != 0 {
		t.Fatalf("DeleteMany = %v, %v", failed, err)
	}
	want := blob.Counts{Writes: 2, BatchDeletes: 1, BatchKeys: 3}
	if got := counts.Counts(); got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
}
