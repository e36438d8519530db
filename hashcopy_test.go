package claimcheck_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"go.uber.org/goleak"

	"github.com/claimcheck/claimcheck"
)

// Every test checks that the hashing goroutine has ended when HashCopy
// returns, whatever happened to the stream.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func payload(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// The bytes written and the bytes hashed are the source's, in order,
// for sizes around the chunk and past the pipeline's depth (so chunks are
// reused: under -race, a chunk read into while the hasher still holds it
// is reported), from readers that return whole or partial chunks.
func TestCopyHashesWhatItWrites(t *testing.T) {
	c := claimcheck.HashCopyChunk
	for _, size := range []int{0, 1, c - 1, c, c + 1, 2 * c, 9*c + 7} {
		src := payload(t, size)
		want := sha256.Sum256(src)
		for name, r := range map[string]func() io.Reader{
			"whole": func() io.Reader { return bytes.NewReader(src) },
			"half":  func() io.Reader { return iotest.HalfReader(bytes.NewReader(src)) },
		} {
			var dst bytes.Buffer
			h := sha256.New()
			n, err := claimcheck.HashCopy(&dst, r(), h)
			if err != nil || n != int64(size) {
				t.Fatalf("size %d %s: Copy = %d, %v", size, name, n, err)
			}
			if !bytes.Equal(dst.Bytes(), src) {
				t.Fatalf("size %d %s: the bytes written differ from the source", size, name)
			}
			if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
				t.Fatalf("size %d %s: the hash is not the source's", size, name)
			}
		}
	}
}

// With one core for Go the copy hashes in the calling goroutine, with
// the same result.
func TestCopyOnOneCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	src := payload(t, 5*claimcheck.HashCopyChunk+3)
	want := sha256.Sum256(src)
	var dst bytes.Buffer
	h := sha256.New()
	if n, err := claimcheck.HashCopy(&dst, iotest.HalfReader(bytes.NewReader(src)), h); err != nil || n != int64(len(src)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	if !bytes.Equal(dst.Bytes(), src) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("the bytes written or hashed are not the source's")
	}
	boom := errors.New("connection reset")
	if _, err := claimcheck.HashCopy(io.Discard, io.MultiReader(bytes.NewReader(src), iotest.ErrReader(boom)), sha256.New()); !errors.Is(err, boom) {
		t.Fatalf("Copy of a failing reader: %v", err)
	}
	if _, err := claimcheck.HashCopy(&failAfter{left: 3 * claimcheck.HashCopyChunk, err: boom}, bytes.NewReader(src), sha256.New()); !errors.Is(err, boom) {
		t.Fatalf("Copy to a failing writer: %v", err)
	}
}

// A failing writer stops the copy at once with its error; the hasher has
// ended.
func TestCopyWriteError(t *testing.T) {
	src := payload(t, 6*claimcheck.HashCopyChunk)
	boom := errors.New("disk full")
	w := &failAfter{left: 2*claimcheck.HashCopyChunk + 10, err: boom}
	n, err := claimcheck.HashCopy(w, bytes.NewReader(src), sha256.New())
	if !errors.Is(err, boom) {
		t.Fatalf("Copy error = %v, want the writer's", err)
	}
	if n > 3*claimcheck.HashCopyChunk {
		t.Fatalf("Copy wrote %d bytes past the failure", n)
	}
}

// A short write without an error is an error.
func TestCopyShortWrite(t *testing.T) {
	for _, size := range []int{10, 3 * claimcheck.HashCopyChunk} {
		w := &failAfter{left: 5}
		if _, err := claimcheck.HashCopy(w, bytes.NewReader(payload(t, size)), sha256.New()); !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("size %d: Copy error = %v, want io.ErrShortWrite", size, err)
		}
	}
}

// A failing reader (a client that went away, a cancelled context) stops
// the copy with its error, before or after the first chunk.
func TestCopyReadError(t *testing.T) {
	boom := errors.New("connection reset")
	for _, after := range []int{0, 100, claimcheck.HashCopyChunk, 3*claimcheck.HashCopyChunk + 1, 7 * claimcheck.HashCopyChunk} {
		src := io.MultiReader(bytes.NewReader(payload(t, after)), iotest.ErrReader(boom))
		var dst bytes.Buffer
		n, err := claimcheck.HashCopy(&dst, src, sha256.New())
		if !errors.Is(err, boom) {
			t.Fatalf("after %d: Copy error = %v, want the reader's", after, err)
		}
		if n != int64(dst.Len()) || n > int64(after) {
			t.Fatalf("after %d: Copy = %d, wrote %d", after, n, dst.Len())
		}
	}
}

// failAfter accepts left bytes, then fails with err (or writes short
// without one).
type failAfter struct {
	left int
	err  error
}

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) <= w.left {
		w.left -= len(p)
		return len(p), nil
	}
	n := w.left
	w.left = 0
	return n, w.err
}
