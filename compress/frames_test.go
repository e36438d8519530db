package compress_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/claimcheck/claimcheck/compress"
)

// framesOf parses the seek table of a framed zstd object.
func framesOf(t *testing.T, stored []byte, size int64) []compress.Frame {
	t.Helper()
	tableLen, ok := compress.ParseSeekFooter(stored[len(stored)-compress.SeekTableTail:])
	if !ok {
		t.Fatal("no seek table footer")
	}
	frames, err := compress.ParseSeekTable(stored[int64(len(stored))-tableLen:], int64(len(stored)), size)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// zstd objects are independent frames of FrameSize with a seek table:
// each frame decodes alone to its slice of the payload, and the whole
// still decodes as one stream (the table is a skippable frame).
func TestFramedZstd(t *testing.T) {
	for _, n := range []int{0, 1, compress.FrameSize - 1, compress.FrameSize, compress.FrameSize + 1, 3*compress.FrameSize + 12345} {
		data := text(n)
		stored := encode(t, compress.Zstd, data)
		frames := framesOf(t, stored, int64(n))
		if want := max(1, (n+compress.FrameSize-1)/compress.FrameSize); len(frames) != want {
			t.Fatalf("%d bytes: %d frames, want %d", n, len(frames), want)
		}
		for i, f := range frames {
			got, err := decode(compress.Zstd, stored[f.Offset:f.Offset+f.Size])
			if err != nil || !bytes.Equal(got, data[f.Start:f.Start+f.Len]) {
				t.Fatalf("%d bytes: frame %d alone: %d bytes, %v", n, i, len(got), err)
			}
		}
		if n > 0 {
			first, last := compress.FramesOf(frames, int64(n-1), 1)
			if first != len(frames)-1 || last != first {
				t.Fatalf("%d bytes: the last byte is in frames %d-%d", n, first, last)
			}
		}
		// A table that does not add up is refused.
		tableLen, _ := compress.ParseSeekFooter(stored[len(stored)-compress.SeekTableTail:])
		if _, err := compress.ParseSeekTable(stored[int64(len(stored))-tableLen:], int64(len(stored)), int64(n)+1); !errors.Is(err, compress.ErrCorrupt) {
			t.Fatalf("%d bytes: a table for another size: %v", n, err)
		}
	}
}

// An object written before framing (one zstd frame, no table) has no
// seek table, and is read from the start.
func TestSingleFrameHasNoSeekTable(t *testing.T) {
	data := text(3 << 20)
	stored := zstdSingleFrame(t, data)
	if _, ok := compress.ParseSeekFooter(stored[len(stored)-compress.SeekTableTail:]); ok {
		t.Fatal("a single-frame object taken for a framed one")
	}
	if got, err := decode(compress.Zstd, stored); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("single-frame object: %v", err)
	}
}

func zstdSingleFrame(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	e, err := zstd.NewWriter(&buf, zstd.WithWindowSize(2<<20))
	if err != nil {
		t.Fatal(err)
	}
	e.Write(data)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The decoder skips the seek table, so a whole read checks it at the end:
// an altered byte anywhere in it is ErrCorrupt, like one in a frame.
func TestSeekTableCheckedByWholeReads(t *testing.T) {
	data := text(2*compress.FrameSize + 100)
	stored := encode(t, compress.Zstd, data)
	tableLen, _ := compress.ParseSeekFooter(stored[len(stored)-compress.SeekTableTail:])
	for i := len(stored) - int(tableLen); i < len(stored); i++ {
		d := bytes.Clone(stored)
		d[i] ^= 0x10
		if _, err := decode(compress.Zstd, d); !errors.Is(err, compress.ErrCorrupt) {
			t.Fatalf("byte %d of the %d-byte table altered: %v, want ErrCorrupt", i-(len(stored)-int(tableLen)), tableLen, err)
		}
	}
}
