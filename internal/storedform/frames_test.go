package storedform_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/storedform"
)

// framed compresses data as every zstd object is written: frames and a
// seek table.
func framed(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := compress.NewWriter(compress.Zstd, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// text is a compressible payload of n bytes.
func text(n int) []byte {
	return bytes.Repeat([]byte(`{"id":12345,"name":"a claim","labels":["x","y"]}`+"\n"), n/49+1)[:n]
}

// FramedRange reads every range of a framed zstd object, plain or
// encrypted, as the same bytes of the payload.
func TestFramedRange(t *testing.T) {
	ctx := context.Background()
	k := testKey(t)
	size := 5*compress.FrameSize + 1234
	data := text(size)
	z := framed(t, data)
	objs := objects{"ns/z": z, "ns/z.dk_test": seal(t, k, "ns/z.dk_test", z)}
	for _, c := range []struct {
		key string
		k   *storedform.Key
	}{{"ns/z", nil}, {"ns/z.dk_test", k}} {
		obj := storedform.Object{Key: c.key, Stored: int64(len(objs[c.key])), Size: int64(size)}
		for _, r := range ranges(int64(size)) {
			got, err := readAll(storedform.FramedRange(ctx, objs, obj, c.k, r[0], r[1]))
			if err != nil || !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
				t.Fatalf("%s, range %v: %d bytes, %v", c.key, r, len(got), err)
			}
		}
	}
}

// A table longer than the first read of the stream's end is read on
// its own.
func TestFramedRangeLongSeekTable(t *testing.T) {
	old := storedform.SetSeekTableRead(20)
	t.Cleanup(func() { storedform.SetSeekTableRead(old) })
	size := 5*compress.FrameSize + 99
	data := text(size)
	objs := objects{"ns/z": framed(t, data)}
	obj := storedform.Object{Key: "ns/z", Stored: int64(len(objs["ns/z"])), Size: int64(size)}
	for _, r := range ranges(int64(size)) {
		got, err := readAll(storedform.FramedRange(context.Background(), objs, obj, nil, r[0], r[1]))
		if err != nil || !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v: %d bytes, %v", r, len(got), err)
		}
	}
}

// An object without a table, or with one that does not add up, answers
// ErrNoSeekTable (a *SeekTableError for the latter); an altered frame
// fails the range that decodes it, and only that one.
func TestFramedRangeWithoutAUsableTable(t *testing.T) {
	ctx := context.Background()
	size := 5*compress.FrameSize + 1234
	data := text(size)
	var single bytes.Buffer
	e, err := zstd.NewWriter(&single)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	objs := objects{"ns/single": single.Bytes(), "ns/z": framed(t, data)}
	obj := func(key string, payload int) storedform.Object {
		return storedform.Object{Key: key, Stored: int64(len(objs[key])), Size: int64(payload)}
	}
	if _, err := storedform.FramedRange(ctx, objs, obj("ns/single", size), nil, 0, 10); !errors.Is(err, storedform.ErrNoSeekTable) {
		t.Fatalf("single-frame object: %v, want ErrNoSeekTable", err)
	}
	_, err = storedform.FramedRange(ctx, objs, obj("ns/z", size+1), nil, 0, 10)
	if _, ok := errors.AsType[*storedform.SeekTableError](err); !ok || !errors.Is(err, storedform.ErrNoSeekTable) {
		t.Fatalf("a table that does not match the payload size: %v, want a SeekTableError", err)
	}

	z := objs["ns/z"]
	tableLen, _ := compress.ParseSeekFooter(z[len(z)-compress.SeekTableTail:])
	frames, err := compress.ParseSeekTable(z[int64(len(z))-tableLen:], int64(len(z)), int64(size))
	if err != nil {
		t.Fatal(err)
	}
	z[frames[1].Offset+frames[1].Size/2] ^= 0x20
	if got, err := readAll(storedform.FramedRange(ctx, objs, obj("ns/z", size), nil, frames[3].Start, 100)); err != nil || !bytes.Equal(got, data[frames[3].Start:frames[3].Start+100]) {
		t.Fatalf("a range of an intact frame: %v", err)
	}
	if _, err := readAll(storedform.FramedRange(ctx, objs, obj("ns/z", size), nil, frames[1].Start, 10)); !errors.Is(err, compress.ErrCorrupt) {
		t.Fatalf("a range of the altered frame: %v, want compress.ErrCorrupt", err)
	}
}
