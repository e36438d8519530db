package storedform

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/claimcheck/claimcheck/compress"
)

// seekTableRead is how much of the end of a zstd stream a ranged read
// fetches at once, in the hope that it holds the whole seek table.
var seekTableRead int64 = 64 << 10 // a var so that a test can make it smaller than a table

// SetSeekTableRead sets how much of the end of a zstd stream a ranged
// read fetches first, so that a test can exercise a seek table longer
// than that without gigabytes of payload. It returns the old value. Only
// tests call it.
func SetSeekTableRead(n int64) int64 {
	old := seekTableRead
	seekTableRead = n
	return old
}

// ErrNoSeekTable means a zstd object has no seek table a ranged read can
// use: it was written before framing, or its table does not add up. The
// caller reads the object from the start instead.
var ErrNoSeekTable = errors.New("no usable seek table")

// SeekTableError is a seek table that is there but does not add up. It
// matches ErrNoSeekTable: the payload may still be fine, and the whole
// read checks it.
type SeekTableError struct{ Err error }

func (e *SeekTableError) Error() string {
	return "the seek table of a zstd object does not add up: " + e.Err.Error()
}

func (e *SeekTableError) Unwrap() error { return e.Err }

// Is makes a SeekTableError match ErrNoSeekTable.
func (e *SeekTableError) Is(target error) bool { return target == ErrNoSeekTable }

// FramedRange opens payload bytes [off, off+n) of obj, a zstd object
// written in frames with a seek table (compress/frames.go, ADR 0112),
// decoding only the frames the range touches: from the object directly
// when k is nil, else through the segments of the object encrypted under
// k. An error matching ErrNoSeekTable means the object has no usable
// table (written before framing, or a table that does not add up, then a
// *SeekTableError): the caller then reads it from the start. Errors
// wrapping compress.ErrCorrupt or ErrSegment, from FramedRange or from
// the reader, mean the stored bytes are not what was written.
func FramedRange(ctx context.Context, objs Objects, obj Object, k *Key, off, n int64) (io.ReadCloser, error) {
	at := func(o, m int64) (io.ReadCloser, error) { return objs.NewRangeReader(ctx, obj.Key, o, m) }
	total := obj.Stored
	if k != nil {
		seg, err := openSegments(ctx, objs, k, obj.Key, obj.Stored)
		if err != nil {
			return nil, err
		}
		at, total = seg.rangeReader, seg.plaintext()
	}
	read := func(o, m int64) ([]byte, error) {
		r, err := at(o, m)
		if err != nil {
			return nil, err
		}
		defer func() { _ = r.Close() }()
		buf := make([]byte, m)
		if _, err := io.ReadFull(r, buf); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
				return nil, nil // shorter than its size: no table to trust
			}
			return nil, err
		}
		return buf, nil
	}
	if total < compress.SeekTableTail {
		return nil, ErrNoSeekTable
	}
	// One read of the end of the stream holds the footer and, for up to
	// about 8,000 frames (512 MiB of payload in frames of 64 KiB), the
	// whole table: one request less on object stores where each costs a
	// round trip.
	endLen := min(total, seekTableRead)
	end, err := read(total-endLen, endLen)
	if err != nil {
		return nil, err
	}
	if end == nil {
		return nil, ErrNoSeekTable
	}
	tableLen, ok := compress.ParseSeekFooter(end[endLen-compress.SeekTableTail:])
	if !ok || tableLen > total {
		return nil, ErrNoSeekTable
	}
	table := end[max(0, endLen-tableLen):]
	if tableLen > endLen {
		if table, err = read(total-tableLen, tableLen); err != nil {
			return nil, err
		}
		if table == nil {
			return nil, ErrNoSeekTable
		}
	}
	frames, perr := compress.ParseSeekTable(table, total, obj.Size)
	if perr != nil {
		return nil, &SeekTableError{perr}
	}
	first, last := compress.FramesOf(frames, off, n)
	from, to := frames[first].Offset, frames[last].Offset+frames[last].Size
	body, err := at(from, to-from)
	if err != nil {
		return nil, err
	}
	dec, err := compress.NewReader(compress.Zstd, body)
	if err != nil {
		_ = body.Close() // the decoder's error is the one to report
		return nil, err
	}
	return &framePart{
		dec: dec, obj: body,
		skip: off - frames[first].Start, left: n,
		tail: frames[last].Start + frames[last].Len - (off + n),
	}, nil
}

// framePart decodes whole frames and passes on the range's bytes. Before
// it reports the end it decodes the rest of the last frame: a zstd
// frame's content checksum comes after its last byte, so only then is
// every byte passed on checked; and the frames must decode to the length
// the table gives them.
type framePart struct {
	dec, obj io.ReadCloser
	skip     int64
	left     int64
	tail     int64
	err      error
}

func (f *framePart) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.skip > 0 {
		m, err := io.CopyN(io.Discard, f.dec, f.skip)
		f.skip -= m
		if err != nil {
			f.err = short(err)
			return 0, f.err
		}
	}
	if f.left == 0 {
		m, err := io.Copy(io.Discard, f.dec)
		switch {
		case err != nil:
			f.err = err
		case m != f.tail:
			f.err = fmt.Errorf("%w: zstd frames decode to %d bytes more than the range, the seek table says %d", compress.ErrCorrupt, m, f.tail)
		default:
			f.err = io.EOF
		}
		return 0, f.err
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.dec.Read(p)
	f.left -= int64(n)
	if err == io.EOF {
		if f.left > 0 {
			f.err = short(err)
			return n, f.err
		}
		err = nil
	}
	if err != nil {
		f.err = err
	}
	return n, err
}

// short is a frame stream that ended before the table said it would.
func short(err error) error {
	if err == io.EOF {
		return fmt.Errorf("%w: zstd frames end before the seek table says", compress.ErrCorrupt)
	}
	return err
}

func (f *framePart) Close() error { return errors.Join(f.dec.Close(), f.obj.Close()) }
