package engine

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/meta"
)

// seekTableRead is how much of the end of a zstd stream a ranged read
// fetches at once, in the hope that it holds the whole seek table.
var seekTableRead int64 = 64 << 10 // a var so that a test can make it smaller than a table

// framedRange opens payload bytes [off, off+n) of a zstd object written
// in frames with a seek table (compress/frames.go, ADR 0112), decoding
// only the frames the range touches: from the object directly, or
// through the segments of an encrypted one. ok is false when the object
// has no usable table (written before framing, or a table that does not
// add up): the caller then reads it from the start.
func (s *Store) framedRange(ctx context.Context, b meta.Blob, sk *sealKey, off, n int64) (body io.ReadCloser, ok bool, err error) {
	at := func(o, m int64) (io.ReadCloser, error) { return s.blobs.NewRangeReader(ctx, b.Key, o, m) }
	total := b.StoredSize
	if sk != nil {
		seg, err := s.openSegments(ctx, sk, b.Key, b.StoredSize)
		if err != nil {
			return nil, false, err
		}
		at, total = seg.rangeReader, seg.plaintext()
	}
	read := func(o, m int64) ([]byte, error) {
		r, err := at(o, m)
		if err != nil {
			return nil, err
		}
		defer r.Close()
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
		return nil, false, nil
	}
	// One read of the end of the stream holds the footer and, for up to
	// about 8,000 frames (8 GiB), the whole table: one request less on
	// object stores where each costs a round trip.
	endLen := min(total, seekTableRead)
	end, err := read(total-endLen, endLen)
	if err != nil || end == nil {
		return nil, false, err
	}
	tableLen, ok := compress.ParseSeekFooter(end[endLen-compress.SeekTableTail:])
	if !ok || tableLen > total {
		return nil, false, nil
	}
	table := end[max(0, endLen-tableLen):]
	if tableLen > endLen {
		if table, err = read(total-tableLen, tableLen); err != nil || table == nil {
			return nil, false, err
		}
	}
	frames, perr := compress.ParseSeekTable(table, total, b.Size)
	if perr != nil {
		// The payload may still be fine: the whole read checks it.
		s.log.Warn("ranged redeem: the seek table of a zstd object does not add up; reading it from the start", "blob", b.ID, "err", perr)
		return nil, false, nil
	}
	first, last := compress.FramesOf(frames, off, n)
	from, to := frames[first].Offset, frames[last].Offset+frames[last].Size
	obj, err := at(from, to-from)
	if err != nil {
		return nil, false, err
	}
	dec, err := compress.NewReader(compress.Zstd, obj)
	if err != nil {
		obj.Close()
		return nil, false, err
	}
	return &framePart{
		dec: dec, obj: obj,
		skip: off - frames[first].Start, left: n,
		tail: frames[last].Start + frames[last].Len - (off + n),
	}, true, nil
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
