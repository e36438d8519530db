package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// zstd objects are written as independent frames of FrameSize bytes of
// payload each, followed by a seek table (the layout of zstd's seekable
// format: a skippable frame holding one entry per frame, compressed and
// decompressed size, and a footer). A zstd decoder reads the frames one
// after the other and skips the table, so such an object decodes whole
// exactly like a single-frame one, and objects written before framing
// (one frame, no table) still decode. The table lets a ranged redeem
// decode only the frames its range touches (ADR 0112): each frame starts
// a fresh window and carries its own content checksum, so a frame read
// alone is checked as a whole stream is.

// FrameSize is the payload bytes per zstd frame. Independent frames cost
// a little ratio (a window never reaches back into the previous frame);
// 1 MiB keeps that under a few percent on JSON while a range pays at most
// two frames more than its own bytes.
const FrameSize = 1 << 20

const (
	seekTableMagic = 0x184D2A5E // skippable frame, user nibble 0xE
	seekableMagic  = 0x8F92EAB1 // the footer's last four bytes
	seekEntrySize  = 8          // compressed, decompressed size (u32 LE each); no checksum
	seekFooterSize = 9          // frame count u32, descriptor u8, magic u32
	skipHeaderSize = 8          // magic u32, frame size u32
)

// Frame is one frame of a framed zstd object.
type Frame struct {
	Offset, Size int64 // in the compressed object
	Start, Len   int64 // in the payload
}

// SeekTableTail is how many bytes from the end of an object hold the
// footer; ParseSeekFooter tells from them how long the whole table is.
const SeekTableTail = seekFooterSize

// ParseSeekFooter reads the last SeekTableTail bytes of an object and
// returns the length of its seek table frame (from the end of the
// object), or ok false when the object has none (a single-frame zstd
// object written before framing).
func ParseSeekFooter(footer []byte) (tableLen int64, ok bool) {
	if len(footer) != seekFooterSize || binary.LittleEndian.Uint32(footer[5:]) != seekableMagic || footer[4] != 0 {
		return 0, false
	}
	n := int64(binary.LittleEndian.Uint32(footer))
	return skipHeaderSize + n*seekEntrySize + seekFooterSize, true
}

// ParseSeekTable reads the seek table frame (the last tableLen bytes of
// a compressed object of objectSize bytes) and returns the frames. The
// table must account for every byte of the object and for payloadSize
// bytes of payload: a table that does not is not trusted.
func ParseSeekTable(table []byte, objectSize, payloadSize int64) ([]Frame, error) {
	bad := func(why string) ([]Frame, error) { return nil, fmt.Errorf("%w: zstd seek table: %s", ErrCorrupt, why) }
	if len(table) < skipHeaderSize+seekFooterSize || binary.LittleEndian.Uint32(table) != seekTableMagic ||
		int64(binary.LittleEndian.Uint32(table[4:])) != int64(len(table)-skipHeaderSize) {
		return bad("no table frame")
	}
	entries := table[skipHeaderSize : len(table)-seekFooterSize]
	frames := make([]Frame, 0, len(entries)/seekEntrySize)
	var off, start int64
	for len(entries) >= seekEntrySize {
		f := Frame{Offset: off, Size: int64(binary.LittleEndian.Uint32(entries)), Start: start, Len: int64(binary.LittleEndian.Uint32(entries[4:]))}
		if f.Size == 0 || f.Len > FrameSize {
			return bad("an entry out of range")
		}
		frames = append(frames, f)
		off += f.Size
		start += f.Len
		entries = entries[seekEntrySize:]
	}
	if off+int64(len(table)) != objectSize || start != payloadSize || len(frames) == 0 {
		return bad(fmt.Sprintf("its frames cover %d bytes of object and %d of payload, not %d and %d", off+int64(len(table)), start, objectSize, payloadSize))
	}
	return frames, nil
}

// FramesOf returns the frames [first, last] holding payload bytes
// [start, start+n), n > 0.
func FramesOf(frames []Frame, start, n int64) (first, last int) {
	find := func(pos int64) int {
		lo, hi := 0, len(frames)-1
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if frames[mid].Start <= pos {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return lo
	}
	return find(start), find(start + n - 1)
}

// framedZstd writes FrameSize payload bytes per frame, then the seek
// table. Every frame is the pooled encoder's stream between a Reset and
// a Close; a frame is opened by the first byte that goes into it, so a
// payload ending on a frame boundary gets no empty frame the table does
// not list.
type framedZstd struct {
	e       *zstd.Encoder
	w       *countWriter
	open    bool
	start   int64 // where the open frame began in the output
	inFrame int64 // payload bytes in the open frame
	frames  []byte
	nframes int
	err     error
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func newFramedZstd(e *zstd.Encoder, w io.Writer) *framedZstd {
	return &framedZstd{e: e, w: &countWriter{w: w}}
}

func (f *framedZstd) openFrame() {
	f.e.Reset(f.w)
	f.open, f.start, f.inFrame = true, f.w.n, 0
}

func (f *framedZstd) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	written := 0
	for len(p) > 0 {
		if !f.open {
			f.openFrame()
		}
		chunk := p[:min(int64(len(p)), FrameSize-f.inFrame)]
		n, err := f.e.Write(chunk)
		written += n
		f.inFrame += int64(n)
		if err != nil {
			f.err = err
			return written, err
		}
		p = p[n:]
		if f.inFrame == FrameSize {
			if err := f.endFrame(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// endFrame closes the open frame and records its entry.
func (f *framedZstd) endFrame() error {
	if err := f.e.Close(); err != nil {
		f.err = err
		return err
	}
	size := f.w.n - f.start
	if size > 1<<32-1 {
		f.err = errors.New("zstd frame over 4 GiB")
		return f.err
	}
	f.frames = binary.LittleEndian.AppendUint32(f.frames, uint32(size))
	f.frames = binary.LittleEndian.AppendUint32(f.frames, uint32(f.inFrame))
	f.nframes++
	f.open = false
	return nil
}

func (f *framedZstd) Close() error {
	if f.err != nil {
		return f.err
	}
	// An empty payload still gets one (empty) frame, as before framing.
	if !f.open && f.nframes == 0 {
		f.openFrame()
	}
	if f.open {
		if err := f.endFrame(); err != nil {
			return err
		}
	}
	table := binary.LittleEndian.AppendUint32(nil, seekTableMagic)
	table = binary.LittleEndian.AppendUint32(table, uint32(len(f.frames)+seekFooterSize))
	table = append(table, f.frames...)
	table = binary.LittleEndian.AppendUint32(table, uint32(f.nframes))
	table = append(table, 0) // descriptor: no checksums (each frame has its own)
	table = binary.LittleEndian.AppendUint32(table, seekableMagic)
	_, err := f.w.Write(table)
	f.err = errClosed
	return err
}

// tailSize is how much of the end of a zstd stream a whole read keeps to
// check the seek table: a table of 16,382 frames (16 GiB of payload)
// fits. A longer one is not checked by whole reads (ranged reads still
// check it against the recorded sizes before they use it).
const tailSize = 128 << 10

// tail is a ring of the last tailSize bytes written to it, allocated on
// the first write.
type tail struct {
	buf  []byte
	pos  int // next write position
	full bool
}

func (t *tail) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if t.buf == nil {
		t.buf = make([]byte, tailSize)
	}
	if len(p) >= tailSize {
		copy(t.buf, p[len(p)-tailSize:])
		t.pos, t.full = 0, true
		return
	}
	n := copy(t.buf[t.pos:], p)
	if n < len(p) {
		copy(t.buf, p[n:])
		t.full = true
	}
	t.pos = (t.pos + len(p)) % tailSize
	if t.pos == 0 {
		t.full = true
	}
}

// bytes returns the kept bytes in order.
func (t *tail) bytes() []byte {
	if !t.full {
		return t.buf[:t.pos]
	}
	return append(append(make([]byte, 0, tailSize), t.buf[t.pos:]...), t.buf[:t.pos]...)
}

// checkSeekTable checks the end of a zstd stream of streamSize bytes that
// decoded to decoded bytes. A stream without a table (written before
// framing) passes; one whose table does not add up, or that ends in a
// table frame whose footer is damaged, is ErrCorrupt.
func checkSeekTable(end []byte, streamSize, decoded int64) error {
	if len(end) < seekFooterSize {
		return nil
	}
	tableLen, ok := ParseSeekFooter(end[len(end)-seekFooterSize:])
	if !ok {
		// A damaged footer leaves the table frame's header in place:
		// 8 + 8k + 9 bytes from the end for k entries.
		for k := int64(0); skipHeaderSize+k*seekEntrySize+seekFooterSize <= int64(len(end)); k++ {
			l := skipHeaderSize + k*seekEntrySize + seekFooterSize
			h := end[int64(len(end))-l:]
			if binary.LittleEndian.Uint32(h) == seekTableMagic && int64(binary.LittleEndian.Uint32(h[4:])) == l-skipHeaderSize {
				return fmt.Errorf("%w: zstd seek table: damaged footer", ErrCorrupt)
			}
		}
		return nil
	}
	if tableLen > streamSize {
		return fmt.Errorf("%w: zstd seek table longer than the stream", ErrCorrupt)
	}
	if tableLen > int64(len(end)) {
		return nil // longer than what a whole read keeps
	}
	_, err := ParseSeekTable(end[int64(len(end))-tableLen:], streamSize, decoded)
	return err
}
