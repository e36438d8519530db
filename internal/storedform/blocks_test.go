package storedform_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/claimcheck/claimcheck/internal/storedform"
)

func blockTableOf(t *testing.T, p []byte) []byte {
	t.Helper()
	bt := storedform.NewBlockTable()
	// Written in uneven pieces, as a body arrives.
	for rest := p; len(rest) > 0; {
		m := min(len(rest), 7777)
		if _, err := bt.Write(rest[:m]); err != nil {
			t.Fatal(err)
		}
		rest = rest[m:]
	}
	return bt.Encoded()
}

// Every range, at and across block boundaries, reads back exactly.
func TestBlockRangeExact(t *testing.T) {
	for _, size := range []int{storedform.BlockSize + 1, 3*storedform.BlockSize - 5, 4 * storedform.BlockSize, 300_001} {
		p := payload(size)
		table := blockTableOf(t, p)
		objs := objects{"k": p}
		obj := storedform.Object{Key: "k", Stored: int64(size), Size: int64(size)}
		for _, c := range append(ranges(int64(size)), [2]int64{storedform.BlockSize - 1, 2}, [2]int64{storedform.BlockSize, 1}) {
			if c[0]+c[1] > int64(size) {
				continue
			}
			got, err := readAll(storedform.BlockRange(context.Background(), objs, obj, table, c[0], c[1]))
			if err != nil {
				t.Fatalf("size %d range %v: %v", size, c, err)
			}
			if !bytes.Equal(got, p[c[0]:c[0]+c[1]]) {
				t.Fatalf("size %d range %v: wrong bytes", size, c)
			}
		}
	}
}

// A payload of at most one block has no table.
func TestBlockTableSmallPayloadHasNone(t *testing.T) {
	for _, n := range []int{0, 1, storedform.BlockSize} {
		if table := blockTableOf(t, payload(n)); table != nil {
			t.Fatalf("%d bytes: a table of %d bytes", n, len(table))
		}
	}
}

// A flipped byte anywhere in a block the range touches fails the range
// before any byte of that block is passed on; a truncated object ends
// the part early.
func TestBlockRangeDetectsDamage(t *testing.T) {
	const size = 5*storedform.BlockSize + 123
	p := payload(size)
	table := blockTableOf(t, p)
	obj := storedform.Object{Key: "k", Stored: size, Size: size}
	off, n := int64(2*storedform.BlockSize+10), int64(storedform.BlockSize)
	// Flipped bytes inside the range, and outside it but inside a
	// covering block.
	for _, at := range []int64{off, off + n - 1, 2 * storedform.BlockSize, 3*storedform.BlockSize + 100} {
		bad := bytes.Clone(p)
		bad[at] ^= 0x20
		r, err := storedform.BlockRange(context.Background(), objects{"k": bad}, obj, table, off, n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if !errors.Is(err, storedform.ErrBlock) {
			t.Fatalf("flip at %d: err %v, want ErrBlock", at, err)
		}
		if at < 3*storedform.BlockSize && len(got) != 0 {
			t.Fatalf("flip at %d in the first block: %d bytes passed on", at, len(got))
		}
		if !bytes.Equal(got, p[off:off+int64(len(got))]) {
			t.Fatalf("flip at %d: a wrong byte passed on", at)
		}
	}
	// A flip outside every covering block does not matter to the range.
	bad := bytes.Clone(p)
	bad[size-1] ^= 1
	if got, err := readAll(storedform.BlockRange(context.Background(), objects{"k": bad}, obj, table, off, n)); err != nil || !bytes.Equal(got, p[off:off+n]) {
		t.Fatalf("flip outside the range: %v", err)
	}
	// Truncated inside the range.
	got, err := readAll(storedform.BlockRange(context.Background(), objects{"k": p[:off+100]}, obj, table, off, n))
	if err != nil || len(got) >= int(n) {
		t.Fatalf("truncated: %d bytes, %v; want a short part", len(got), err)
	}
	// A table that does not cover the payload is not used.
	if _, err := storedform.BlockRange(context.Background(), objects{"k": p}, storedform.Object{Key: "k", Stored: size + 1<<20, Size: size + 1<<20}, table, 0, 10); !errors.Is(err, storedform.ErrNoBlockTable) {
		t.Fatalf("table of another size: %v", err)
	}
}

// A table saved and resumed in the middle of a block ends as one
// computed in one go.
func TestBlockTableResumes(t *testing.T) {
	p := payload(3*storedform.BlockSize + 999)
	whole := blockTableOf(t, p)
	for _, cut := range []int{0, 1, storedform.BlockSize, storedform.BlockSize + 7, len(p)} {
		a := storedform.NewBlockTable()
		_, _ = a.Write(p[:cut])
		state, err := a.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		b := storedform.NewBlockTable()
		if err := b.UnmarshalBinary(state); err != nil {
			t.Fatal(err)
		}
		_, _ = b.Write(p[cut:])
		if !bytes.Equal(b.Encoded(), whole) {
			t.Fatalf("resumed at %d: another table", cut)
		}
	}
	if err := storedform.NewBlockTable().UnmarshalBinary([]byte{1, 2, 3}); err == nil {
		t.Fatal("a state of 3 bytes was accepted")
	}
}
