package storedform_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/internal/storedform"
)

// objects is an object store in memory: key → bytes.
type objects map[string][]byte

func (o objects) NewRangeReader(_ context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	b, ok := o[key]
	if !ok {
		return nil, blob.ErrNotFound
	}
	offset = min(offset, int64(len(b)))
	end := min(offset+length, int64(len(b)))
	return io.NopCloser(bytes.NewReader(b[offset:end])), nil
}

func testKey(t testing.TB) *storedform.Key {
	t.Helper()
	k, err := storedform.NewKey("dk_test", time.Unix(0, 0), bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func payload(n int) []byte {
	r := rand.New(rand.NewPCG(1, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// readAll reads a range opened by open, or returns its error.
func readAll(r io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// ranges are [off, n) pairs around the segment and frame boundaries of
// a payload of size bytes.
func ranges(size int64) [][2]int64 {
	const first, later = storedform.SegmentSize - 40 - 16, storedform.SegmentSize - 16
	var out [][2]int64
	for _, c := range [][2]int64{
		{0, 1}, {0, size}, {size - 1, 1}, {size / 2, 1000}, {first - 1, 2}, {first, later},
		{first + later - 3, 10}, {1000, 2 * later}, {65535, 2}, {65536, 65536}, {3 * 65536, 70000},
	} {
		if c[0] >= 0 && c[0] < size {
			out = append(out, [2]int64{c[0], min(c[1], size-c[0])})
		}
	}
	return out
}
