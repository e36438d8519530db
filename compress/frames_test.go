package compress_test

import (
	"bytes"
	"errors"
	"io"
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

// Objects written before ADR 0135 have frames of 1 MiB (and before ADR
// 0150 of 256 KiB, within the same bound): their table is
// still trusted (a range decodes only its frames), and they decode whole.
// Frames over 1 MiB were never written, and a table claiming one is not
// trusted.
func TestOneMiBFramesStillRead(t *testing.T) {
	const mib = 1 << 20
	n := 2*mib + 777
	data := text(n)
	var buf bytes.Buffer
	w := compress.NewZstdWriterFrames(mib, &buf)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	stored := buf.Bytes()
	frames := framesOf(t, stored, int64(n))
	if len(frames) != 3 || frames[1].Start != mib || frames[1].Len != mib {
		t.Fatalf("frames %+v, want three from 1 MiB ones", frames)
	}
	f := frames[1]
	if got, err := decode(compress.Zstd, stored[f.Offset:f.Offset+f.Size]); err != nil || !bytes.Equal(got, data[mib:2*mib]) {
		t.Fatalf("the second 1 MiB frame alone: %d bytes, %v", len(got), err)
	}
	if got, err := decode(compress.Zstd, stored); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("whole read: %d bytes, %v", len(got), err)
	}
	// Sent as stored (ADR 0136), its table is checked too: it is shorter
	// than the one a payload of that size gets now (ADR 0150).
	if got, err := io.ReadAll(compress.CheckSeekTable(bytes.NewReader(stored), int64(n))); err != nil || !bytes.Equal(got, stored) {
		t.Fatalf("passed on as stored: %d bytes, %v", len(got), err)
	}

	buf.Reset()
	w = compress.NewZstdWriterFrames(mib+1, &buf)
	_, _ = w.Write(data)
	w.Close()
	stored = buf.Bytes()
	tableLen, _ := compress.ParseSeekFooter(stored[len(stored)-compress.SeekTableTail:])
	if _, err := compress.ParseSeekTable(stored[int64(len(stored))-tableLen:], int64(len(stored)), int64(n)); !errors.Is(err, compress.ErrCorrupt) {
		t.Fatalf("a table with frames over 1 MiB: %v, want ErrCorrupt", err)
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
	_, _ = e.Write(data)
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

// brokenAfter accepts n bytes, then fails every write, like a store whose
// connection dropped.
type brokenAfter struct{ n int }

func (b *brokenAfter) Write(p []byte) (int, error) {
	if len(p) > b.n {
		return 0, errBackend
	}
	b.n -= len(p)
	return len(p), nil
}

// A failed write of one frame fails the stream, also while later frames
// are still being encoded: Write and Close report it, and nothing is left
// running (TestMain checks for goroutines).
func TestFramedZstdWriteError(t *testing.T) {
	data := text(6 * compress.FrameSize)
	for _, at := range []int{0, 100, 50_000} {
		w, err := compress.NewWriter(compress.Zstd, &brokenAfter{n: at})
		if err != nil {
			t.Fatal(err)
		}
		var werr error
		for rest := data; len(rest) > 0 && werr == nil; rest = rest[min(len(rest), 100_000):] {
			_, werr = w.Write(rest[:min(len(rest), 100_000)])
		}
		if cerr := w.Close(); !errors.Is(werr, errBackend) && !errors.Is(cerr, errBackend) {
			t.Fatalf("failing after %d bytes: Write %v, Close %v; want the writer's error", at, werr, cerr)
		}
	}
}

// CheckSeekTable passes a stream on unchanged and checks its table at the
// end, as a whole read does, without decoding: an altered byte anywhere
// in the table, or a payload size the table does not add up to, fails
// the last Read with ErrCorrupt; a stream without a table passes.
func TestCheckSeekTable(t *testing.T) {
	data := text(2*compress.FrameSize + 100)
	stored := encode(t, compress.Zstd, data)
	pass := func(stream []byte, size int64) ([]byte, error) {
		return io.ReadAll(compress.CheckSeekTable(bytes.NewReader(stream), size))
	}
	if got, err := pass(stored, int64(len(data))); err != nil || !bytes.Equal(got, stored) {
		t.Fatalf("an intact stream: %d bytes, %v", len(got), err)
	}
	if _, err := pass(stored, int64(len(data))+1); !errors.Is(err, compress.ErrCorrupt) {
		t.Fatalf("another payload size: %v, want ErrCorrupt", err)
	}
	tableLen, _ := compress.ParseSeekFooter(stored[len(stored)-compress.SeekTableTail:])
	for i := len(stored) - int(tableLen); i < len(stored); i++ {
		d := bytes.Clone(stored)
		d[i] ^= 0x10
		if _, err := pass(d, int64(len(data))); !errors.Is(err, compress.ErrCorrupt) {
			t.Fatalf("byte %d of the table altered: %v, want ErrCorrupt", i-(len(stored)-int(tableLen)), err)
		}
	}
	if _, err := pass(zstdSingleFrame(t, data), int64(len(data))); err != nil {
		t.Fatalf("a single-frame stream: %v", err)
	}
}

// NewZstdOrNone stores bytes that do not shrink as they are, and the
// rest as the framed zstd NewWriter writes, deciding on the first frame;
// chosen hears the decision before the first byte reaches the writer.
func TestZstdOrNone(t *testing.T) {
	// Random first, text after: the first frame decides.
	mixed := append(random(compress.FrameSize), text(3*compress.FrameSize)...)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, compress.Zstd},
		{"text, one byte", text(1), compress.None},
		{"text, one frame", text(compress.FrameSize), compress.Zstd},
		{"text, frames", text(3*compress.FrameSize + 12345), compress.Zstd},
		{"random, part of a frame", random(1000), compress.None},
		{"random, one frame", random(compress.FrameSize), compress.None},
		{"random, a frame and a byte", random(compress.FrameSize + 1), compress.None},
		{"random, frames", random(1<<20 + 17), compress.None},
		{"random then text", mixed, compress.None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			var chosen []string
			w := compress.NewZstdOrNone(writerFunc(func(p []byte) (int, error) {
				if len(chosen) != 1 {
					t.Fatalf("%d bytes written after %d decisions", len(p), len(chosen))
				}
				return buf.Write(p)
			}), func(alg string) { chosen = append(chosen, alg) })
			// Odd pieces, so frames fill across writes.
			for rest := tc.data; len(rest) > 0; {
				n := min(len(rest), 10007)
				if _, err := w.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if len(chosen) != 1 || chosen[0] != tc.want {
				t.Fatalf("chosen %v, want [%s]", chosen, tc.want)
			}
			got, err := decode(tc.want, buf.Bytes())
			if err != nil || !bytes.Equal(got, tc.data) {
				t.Fatalf("decoded %d bytes of %d: %v", len(got), len(tc.data), err)
			}
			if tc.want == compress.Zstd {
				framesOf(t, buf.Bytes(), int64(len(tc.data)))
			}
		})
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
