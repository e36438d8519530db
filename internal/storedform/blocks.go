package storedform

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// BlockSize is the payload block of a plain object's block table (ADR
// 0257): the unit a ranged read verifies before it passes on any of its
// bytes, the same 64 KiB as an AEAD segment and a zstd frame.
const BlockSize = 64 << 10

// blockTableVersion is the first byte of an encoded table.
const blockTableVersion = 1

// castagnoli is CRC32C, which the CPU computes (SSE 4.2, ARMv8 CRC).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrBlock means a block of a plain object does not match its entry in
// the object's block table: the stored bytes are not those written.
var ErrBlock = errors.New("a block of the stored object fails its checksum")

// ErrNoBlockTable means a recorded block table does not describe the
// object (a payload size it cannot cover): the caller does not trust it
// and reads the object whole instead.
var ErrNoBlockTable = errors.New("no usable block table")

// BlockTable computes the block table of a payload written through it:
// the CRC32C of every BlockSize bytes, the last block shorter. It is an
// io.Writer that never fails. Its state can be saved and resumed
// (MarshalBinary, UnmarshalBinary), so a payload received in several
// requests gets its table without being read again.
type BlockTable struct {
	sums []uint32
	cur  uint32 // CRC32C of the current block so far
	in   int    // bytes of the current block written
}

// NewBlockTable starts a table for a payload written from its first byte.
func NewBlockTable() *BlockTable { return &BlockTable{} }

// Write adds p to the payload.
func (t *BlockTable) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		m := min(len(p), BlockSize-t.in)
		t.cur = crc32.Update(t.cur, castagnoli, p[:m])
		t.in += m
		p = p[m:]
		if t.in == BlockSize {
			t.sums = append(t.sums, t.cur)
			t.cur, t.in = 0, 0
		}
	}
	return n, nil
}

// Blocks is how many whole blocks were written.
func (t *BlockTable) Blocks() int { return len(t.sums) }

// MarshalBinary saves the table's state: the CRC of the current block,
// its length, then the sums of the whole blocks, little endian.
func (t *BlockTable) MarshalBinary() ([]byte, error) {
	out := make([]byte, 8, 8+4*len(t.sums))
	binary.LittleEndian.PutUint32(out, t.cur)
	binary.LittleEndian.PutUint32(out[4:], uint32(t.in))
	for _, s := range t.sums {
		out = binary.LittleEndian.AppendUint32(out, s)
	}
	return out, nil
}

// UnmarshalBinary resumes a state saved by MarshalBinary.
func (t *BlockTable) UnmarshalBinary(b []byte) error {
	if len(b) < 8 || len(b)%4 != 0 || binary.LittleEndian.Uint32(b[4:]) >= BlockSize {
		return errors.New("storedform: not a block table state")
	}
	t.cur, t.in = binary.LittleEndian.Uint32(b), int(binary.LittleEndian.Uint32(b[4:]))
	t.sums = t.sums[:0]
	for b = b[8:]; len(b) > 0; b = b[4:] {
		t.sums = append(t.sums, binary.LittleEndian.Uint32(b))
	}
	return nil
}

// Encoded is the table of the payload written so far, to be recorded
// with the object: a version byte, the block size and one CRC32C per
// block, little endian. A payload of at most one block has no table
// (nil): its ranged reads read it whole and check its sha256.
func (t *BlockTable) Encoded() []byte {
	sums := t.sums
	if t.in > 0 {
		sums = append(sums[:len(sums):len(sums)], t.cur)
	}
	if len(sums) <= 1 {
		return nil
	}
	out := make([]byte, 5, 5+4*len(sums))
	out[0] = blockTableVersion
	binary.LittleEndian.PutUint32(out[1:], BlockSize)
	for _, s := range sums {
		out = binary.LittleEndian.AppendUint32(out, s)
	}
	return out
}

// parseBlockTable reads an encoded table of a payload of size bytes.
func parseBlockTable(table []byte, size int64) (bs int64, sums []byte, err error) {
	if len(table) < 5 || table[0] != blockTableVersion {
		return 0, nil, fmt.Errorf("%w: unknown encoding", ErrNoBlockTable)
	}
	bs = int64(binary.LittleEndian.Uint32(table[1:]))
	sums = table[5:]
	if bs <= 0 || len(sums)%4 != 0 || int64(len(sums)/4) != (size+bs-1)/bs {
		return 0, nil, fmt.Errorf("%w: %d entries of %d bytes do not cover a payload of %d bytes", ErrNoBlockTable, len(sums)/4, bs, size)
	}
	return bs, sums, nil
}

// BlockRange opens payload bytes [off, off+n) of obj, a plain object
// whose block table is table (BlockTable.Encoded): it reads the whole
// blocks the range touches, in one range read, and passes on a block's
// bytes only after its CRC32C matched. A block that does not match is
// an error wrapping ErrBlock, before any of its bytes; an object that
// ends inside a block ends the part early (io.EOF before n bytes), so
// the caller sees it shorter than recorded. A table that does not cover
// obj.Size answers ErrNoBlockTable.
func BlockRange(ctx context.Context, objs Objects, obj Object, table []byte, off, n int64) (io.ReadCloser, error) {
	bs, sums, err := parseBlockTable(table, obj.Size)
	if err != nil {
		return nil, err
	}
	first := off / bs
	end := min(((off+n+bs-1)/bs)*bs, obj.Size)
	r, err := objs.NewRangeReader(ctx, obj.Key, first*bs, end-first*bs)
	if err != nil {
		return nil, err
	}
	return &blockPart{r: r, sums: sums, bs: bs, block: first, size: obj.Size,
		skip: int(off - first*bs), left: n, blk: make([]byte, bs)}, nil
}

// blockPart passes on the range's bytes of whole verified blocks.
type blockPart struct {
	r     io.ReadCloser
	sums  []byte
	bs    int64
	block int64 // the next block to read
	size  int64
	skip  int    // bytes of the next block before the range
	left  int64  // bytes of the range not yet passed on
	blk   []byte // one block's room
	buf   []byte // the verified bytes of the current block not yet passed on
	err   error
}

func (b *blockPart) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left == 0 {
		b.err = io.EOF
		return 0, b.err
	}
	if len(b.buf) == 0 {
		if err := b.next(); err != nil {
			b.err = err
			return 0, err
		}
	}
	m := copy(p[:min(int64(len(p)), b.left)], b.buf)
	b.buf = b.buf[m:]
	b.left -= int64(m)
	return m, nil
}

// next reads and verifies the next block into buf, without the bytes
// before the range.
func (b *blockPart) next() error {
	start := b.block * b.bs
	blen := min(b.bs, b.size-start)
	buf := b.blk[:blen]
	if _, err := io.ReadFull(b.r, buf); err != nil {
		if err == io.ErrUnexpectedEOF {
			return io.EOF // shorter than recorded: the caller says so
		}
		return err
	}
	want := binary.LittleEndian.Uint32(b.sums[4*b.block:])
	if got := crc32.Checksum(buf, castagnoli); got != want {
		return fmt.Errorf("%w: block %d (payload bytes %d to %d)", ErrBlock, b.block, start, start+blen-1)
	}
	b.block++
	b.buf = buf[b.skip:]
	b.skip = 0
	return nil
}

func (b *blockPart) Close() error { return b.r.Close() }
