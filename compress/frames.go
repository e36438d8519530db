package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

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

// FrameSize is the payload bytes per zstd frame written: 64 KiB, the
// block size of zstd's fastest level, so a frame is one block encoded
// without history (ADR 0150). That is the encoder's quickest path: about
// 10% less CPU than 256 KiB frames of four blocks each on the
// benchmark's records, the same on a REST listing and on prose.
// Independent frames cost ratio only where repeats reach further back
// than a frame: about 2% on the listing and on prose; on the records the
// ratio is 13% better (the fastest level's matches are closer without
// history). Small frames also
// let a put's encoding spread over the cores in finer pieces, leave less
// for the last frame after the body ends, and cost a range at most two
// 64 KiB frames beyond its own bytes.
const FrameSize = 64 << 10

// maxFrameLen is the most payload a frame of a seek table may hold:
// objects written before ADR 0135 have frames of 1 MiB, those written
// before ADR 0150 frames of 256 KiB.
const maxFrameLen = 1 << 20

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
		if f.Size == 0 || f.Len > maxFrameLen {
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

// framedZstd writes the payload as frames of FrameSize payload bytes, then
// the seek table. A full frame is encoded (EncodeAll) in a goroutine of
// its own while the caller goes on writing, that is reading and hashing
// the body: a put's compression overlaps its other work and spreads over
// the cores that are free (ADR 0135). At most framesInFlight frames of a
// stream are held at once, and the shared encoder runs at most GOMAXPROCS
// encodes at a time however many streams there are, so memory stays
// bounded by the frame size and a busy server encodes no more frames at
// once than it has cores. The last frame (the only one of a payload of
// up to FrameSize bytes) is encoded in the caller's goroutine. Frames
// reach w in payload order. A frame is opened by the first byte that goes
// into it, so a payload ending on a frame boundary gets no empty frame;
// an empty payload gets one empty frame, as before framing.
type framedZstd struct {
	enc     *zstd.Encoder
	w       io.Writer
	size    int         // payload bytes per frame: FrameSize
	buf     []byte      // the open frame's payload; nil when none is open
	pending []*frameJob // frames being encoded, oldest first
	table   []byte      // the seek table's entries so far
	nframes int
	err     error // sticky: a failed write, or errClosed
	// orNone: a stream of NewZstdOrNone not settled yet; chosen hears
	// how it settles, before its first byte reaches w. plain: settled on
	// none, every byte goes to w as it is.
	orNone bool
	chosen func(alg string)
	plain  bool
}

// framesInFlight is how many full frames a stream may have in its
// encoders at once: 512 KiB, so the caller goes on reading and hashing
// the body while every core encodes. A stream's buffers stay bounded by
// nine frames of payload (with the open one) and eight of output, about
// 1.1 MiB, what two 256 KiB frames in flight held with their outputs.
const framesInFlight = 8

// frameJob is one frame being encoded.
type frameJob struct {
	in, out *[]byte
	done    chan struct{}
}

// Frame buffers, reused across streams: in holds a frame's payload (cap
// FrameSize), out its compressed bytes, up to maxFrameOut.
var (
	frameIns  = sync.Pool{New: func() any { b := make([]byte, 0, FrameSize); return &b }}
	frameOuts = sync.Pool{New: func() any { b := make([]byte, 0, maxFrameOut); return &b }}
)

// maxFrameOut is the most a frame of FrameSize bytes encodes to: bytes
// that do not shrink are stored as a raw block, plus the frame header, the
// block header and the checksum. An out buffer of that size never grows:
// one of half a frame grew (and was allocated anew, and collected) for
// every frame of incompressible bytes, a fifth more server CPU for puts of
// 64 KiB of random bytes.
const maxFrameOut = FrameSize + 64

func newFramedZstd(enc *zstd.Encoder, w io.Writer) *framedZstd {
	return &framedZstd{enc: enc, w: w, size: FrameSize}
}

func (f *framedZstd) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.plain {
		return f.writePlain(p)
	}
	written := 0
	for len(p) > 0 {
		// A full frame goes to the encoders once a byte for the next
		// one comes: the last frame, full or not, is the caller's, so a
		// payload of one frame (64 KiB puts) never waits for a goroutine.
		if len(f.buf) == f.size {
			if err := f.submit(); err != nil {
				return written, err
			}
			if f.plain { // settled on none, what it held written
				n, err := f.writePlain(p)
				return written + n, err
			}
		}
		if f.buf == nil {
			f.buf = (*frameIns.Get().(*[]byte))[:0]
		}
		n := min(len(p), f.size-len(f.buf))
		f.buf = append(f.buf, p[:n]...)
		written += n
		p = p[n:]
	}
	return written, nil
}

// writePlain passes p to w as it is (a stream settled on none).
func (f *framedZstd) writePlain(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		f.err = err
	}
	return n, err
}

// incompressible reports whether a frame of payload in that encoded to
// out is not worth storing as zstd: it saved less than 1/32 of the
// bytes. Random, encrypted or already compressed bytes come out of
// zstd's fastest level as a raw block, a few bytes longer than they went
// in (maxFrameOut).
func incompressible(in, out []byte) bool {
	return len(in) > 0 && len(out) > len(in)-len(in)/32
}

// settle decides a NewZstdOrNone stream on its first frame, pending[0],
// when a second frame is full or the stream closes (ADR 0165). The first
// frame was encoded in the background while the second arrived, so the
// wait is short; the frames after it are never encoded if it did not
// shrink. Settled on none, the first frame's payload and the open frame
// are written as they are; settled on zstd, the stream goes on as any
// other.
func (f *framedZstd) settle() error {
	f.orNone = false
	j := f.pending[0]
	<-j.done
	if !incompressible(*j.in, *j.out) {
		f.chosen(Zstd)
		return nil
	}
	f.chosen(None)
	f.plain, f.pending = true, nil
	_, err := f.w.Write(*j.in)
	frameIns.Put(j.in)
	frameOuts.Put(j.out)
	if err == nil && f.buf != nil {
		_, err = f.w.Write(f.buf)
		buf := f.buf
		frameIns.Put(&buf)
		f.buf = nil
	}
	if err != nil {
		f.err = err
	}
	return err
}

// submit hands the open (full) frame to an encoder goroutine, after
// writing out the oldest pending frame if there are framesInFlight.
func (f *framedZstd) submit() error {
	if f.orNone && len(f.pending) == 1 {
		// The second frame is full: the first one decides.
		if err := f.settle(); err != nil || f.plain {
			return err
		}
	}
	if len(f.pending) == framesInFlight {
		if err := f.writeOldest(); err != nil {
			return err
		}
	}
	in := f.buf
	j := &frameJob{in: &in, out: frameOuts.Get().(*[]byte), done: make(chan struct{})}
	f.buf = nil
	go func() {
		*j.out = f.enc.EncodeAll(*j.in, (*j.out)[:0])
		close(j.done)
	}()
	f.pending = append(f.pending, j)
	return nil
}

// writeOldest waits for the oldest pending frame and writes it.
func (f *framedZstd) writeOldest() error {
	j := f.pending[0]
	<-j.done
	f.pending = append(f.pending[:0], f.pending[1:]...)
	err := f.writeFrame(*j.out, len(*j.in))
	frameIns.Put(j.in)
	frameOuts.Put(j.out)
	return err
}

// writeFrame writes one compressed frame of n payload bytes and records
// its entry.
func (f *framedZstd) writeFrame(frame []byte, n int) error {
	if _, err := f.w.Write(frame); err != nil {
		f.err = err
		return err
	}
	if len(frame) > 1<<32-1 {
		f.err = errors.New("zstd frame over 4 GiB")
		return f.err
	}
	f.table = binary.LittleEndian.AppendUint32(f.table, uint32(len(frame)))
	f.table = binary.LittleEndian.AppendUint32(f.table, uint32(n))
	f.nframes++
	return nil
}

func (f *framedZstd) Close() error {
	if f.err != nil {
		// Frames still encoding finish on their own; their buffers
		// are left to the GC.
		f.pending = nil
		return f.err
	}
	if f.orNone && len(f.pending) == 1 {
		if err := f.settle(); err != nil {
			return err
		}
	}
	if f.plain {
		f.err = errClosed
		return nil // no frames, no table: the payload as it is
	}
	// The last frame is encoded here, while the pending ones finish.
	var last *[]byte
	if f.buf != nil || f.nframes+len(f.pending) == 0 {
		last = frameOuts.Get().(*[]byte)
		*last = f.enc.EncodeAll(f.buf, (*last)[:0])
		defer frameOuts.Put(last)
	}
	if f.orNone {
		// The whole payload is this one frame (an empty one stays zstd,
		// as before).
		f.orNone = false
		if incompressible(f.buf, *last) {
			f.chosen(None)
			_, err := f.writePlain(f.buf)
			buf := f.buf
			frameIns.Put(&buf)
			f.buf = nil
			if err == nil {
				f.err = errClosed
			}
			return err
		}
		f.chosen(Zstd)
	}
	for len(f.pending) > 0 {
		if err := f.writeOldest(); err != nil {
			return err
		}
	}
	if last != nil {
		if err := f.writeFrame(*last, len(f.buf)); err != nil {
			return err
		}
	}
	if f.buf != nil {
		buf := f.buf
		frameIns.Put(&buf)
		f.buf = nil
	}
	table := binary.LittleEndian.AppendUint32(nil, seekTableMagic)
	table = binary.LittleEndian.AppendUint32(table, uint32(len(f.table)+seekFooterSize))
	table = append(table, f.table...)
	table = binary.LittleEndian.AppendUint32(table, uint32(f.nframes))
	table = append(table, 0) // descriptor: no checksums (each frame has its own)
	table = binary.LittleEndian.AppendUint32(table, seekableMagic)
	_, err := f.w.Write(table)
	f.err = errClosed
	return err
}

// tailSize is how much of the end of a zstd stream a whole read keeps to
// check the seek table: a table of 131,069 frames, 8 GiB of payload in
// 64 KiB frames (above the default max_size of 5 GiB), fits. A longer one
// is not checked by whole reads (ranged reads still check it against the
// recorded sizes before they use it).
const tailSize = 1 << 20

// tailStart is the buffer a tail starts with; it grows with the stream up
// to its limit, so a short stream costs no more than it did with a fixed
// 128 KiB ring.
const tailStart = 128 << 10

// tail keeps the last limit bytes written to it (tailSize when limit is
// 0): a buffer that grows with the stream until it holds limit bytes,
// then a ring.
type tail struct {
	limit int
	buf   []byte
	pos   int  // ring only: the next write position, the oldest byte
	ring  bool // buf holds limit bytes and wraps at pos
}

func (t *tail) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if t.limit == 0 {
		t.limit = tailSize
	}
	if !t.ring {
		if len(t.buf)+len(p) <= t.limit {
			if t.buf == nil {
				t.buf = make([]byte, 0, min(t.limit, max(tailStart, len(p))))
			}
			t.buf = append(t.buf, p...)
			return
		}
		// From here on a ring of the last limit bytes of buf and p.
		ring := make([]byte, t.limit)
		keep := t.limit - min(len(p), t.limit) // of buf
		n := copy(ring, t.buf[len(t.buf)-keep:])
		copy(ring[n:], p[len(p)-(t.limit-n):])
		t.buf, t.pos, t.ring = ring, 0, true
		return
	}
	if len(p) >= t.limit {
		copy(t.buf, p[len(p)-t.limit:])
		t.pos = 0
		return
	}
	n := copy(t.buf[t.pos:], p)
	if n < len(p) {
		copy(t.buf, p[n:])
	}
	t.pos = (t.pos + len(p)) % t.limit
}

// bytes returns the kept bytes in order.
func (t *tail) bytes() []byte {
	if !t.ring {
		return t.buf
	}
	return append(append(make([]byte, 0, t.limit), t.buf[t.pos:]...), t.buf[:t.pos]...)
}

// maxTableLen is the longest seek table an object of size payload bytes
// written by this package can have: one entry per FrameSize bytes (one
// for an empty payload); objects written with larger frames have fewer.
func maxTableLen(size int64) int64 {
	frames := max(1, (size+FrameSize-1)/FrameSize)
	return skipHeaderSize + frames*seekEntrySize + seekFooterSize
}

// CheckSeekTable returns a reader that passes the zstd stream r on as it
// is and, at its end, checks its seek table as a whole read by NewReader
// does (ADR 0112): the table must account for the stream's length and for
// size bytes of payload, and a stream that ends in a table frame must have
// an intact footer; if not, the last Read fails with ErrCorrupt instead of
// io.EOF. A stream without a table (written before framing) passes. It
// decodes nothing: the frames' own checksums are for whoever decodes them.
func CheckSeekTable(r io.Reader, size int64) io.Reader {
	// The payload's size bounds the table, so only that much of the end
	// is kept: a few hundred bytes for a MiB instead of a 128 KiB ring.
	return &tableChecker{r: r, size: size, tail: tail{limit: int(min(maxTableLen(size), tailSize))}}
}

type tableChecker struct {
	r    io.Reader
	size int64
	n    int64
	tail tail
}

func (t *tableChecker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.n += int64(n)
	t.tail.write(p[:n])
	if err == io.EOF {
		if terr := checkSeekTable(t.tail.bytes(), t.n, t.size, maxTableLen(t.size)); terr != nil {
			return n, terr
		}
	}
	return n, err
}

// checkSeekTable checks the end of a zstd stream of streamSize bytes that
// decoded to decoded bytes. A stream without a table (written before
// framing) passes; one whose table does not add up, or that ends in a
// table frame whose footer is damaged, is ErrCorrupt. maxLen, when not
// 0, is the longest table the payload's size allows (maxTableLen): a
// footer that claims more frames is damaged, not a table too long to
// check.
func checkSeekTable(end []byte, streamSize, decoded, maxLen int64) error {
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
	if maxLen > 0 && tableLen > maxLen {
		return fmt.Errorf("%w: zstd seek table of more frames than %d bytes of payload have", ErrCorrupt, decoded)
	}
	if tableLen > int64(len(end)) {
		return nil // longer than what a whole read keeps
	}
	_, err := ParseSeekTable(end[int64(len(end))-tableLen:], streamSize, decoded)
	return err
}
