package claimcheck_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"go.uber.org/goleak"

	"github.com/claimcheck/claimcheck"
)

// readers are the two ways a caller drains a Payload: Read with a small
// buffer, and io.Copy, which takes WriteTo (the pipelined path).
var readers = map[string]func(dst io.Writer, p *claimcheck.Payload) (int64, error){
	"Read": func(dst io.Writer, p *claimcheck.Payload) (int64, error) {
		return io.CopyBuffer(dst, struct{ io.Reader }{p}, make([]byte, 8<<10))
	},
	"WriteTo": func(dst io.Writer, p *claimcheck.Payload) (int64, error) { return p.WriteTo(dst) },
}

func testPayload(t *testing.T, size int) ([]byte, claimcheck.Ref) {
	t.Helper()
	b := make([]byte, size)
	rand.Read(b)
	return b, claimcheck.Ref{ID: "c1", Size: int64(size), Digest: claimcheck.DigestOf(b)}
}

// No caller reads to the end without an error on bytes that differ from
// the recorded ones, whichever way it reads, and never gets more than
// the recorded size; OnMismatch is told once.
func TestPayloadVerifies(t *testing.T) {
	defer goleak.VerifyNone(t)
	const size = 700 << 10 // several chunks of the pipelined path
	good, ref := testPayload(t, size)
	altered := bytes.Clone(good)
	altered[size-3] ^= 1
	for name, read := range readers {
		for _, tc := range []struct {
			name string
			body []byte
			want error
		}{
			{"intact", good, nil},
			{"altered", altered, claimcheck.ErrChecksumMismatch},
			{"short", good[:size-1], claimcheck.ErrChecksumMismatch},
			{"long", append(bytes.Clone(good), 'x'), claimcheck.ErrChecksumMismatch},
			{"empty", nil, claimcheck.ErrChecksumMismatch},
		} {
			p := claimcheck.NewPayload(ref, "", io.NopCloser(iotest.HalfReader(bytes.NewReader(tc.body))))
			told := 0
			p.OnMismatch(func(error) { told++ })
			var dst bytes.Buffer
			n, err := read(&dst, p)
			if tc.want == nil {
				if err != nil || n != size || !bytes.Equal(dst.Bytes(), good) {
					t.Fatalf("%s %s: %d bytes, %v; want the payload whole", name, tc.name, n, err)
				}
				if m, err := p.Read(make([]byte, 1)); m != 0 || err != io.EOF {
					t.Fatalf("%s %s: Read after the end = %d, %v; want io.EOF", name, tc.name, m, err)
				}
				continue
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s %s: error %v, want %v", name, tc.name, err, tc.want)
			}
			if dst.Len() > size {
				t.Fatalf("%s %s: %d bytes handed out, more than the %d recorded", name, tc.name, dst.Len(), size)
			}
			if told != 1 {
				t.Fatalf("%s %s: OnMismatch told %d times, want once", name, tc.name, told)
			}
			if _, err := p.Read(make([]byte, 1)); !errors.Is(err, tc.want) {
				t.Fatalf("%s %s: Read after the failure = %v, want the failure again", name, tc.name, err)
			}
		}
	}
}

// A transport that fails part-way, or reports a failure at the very end
// (the HTTP client's trailer check), fails the read with its own error,
// not as a mismatch; a writer that fails stops WriteTo with its error.
func TestPayloadStreamErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	const size = 500 << 10
	good, ref := testPayload(t, size)
	broken := errors.New("connection reset")
	for name, read := range readers {
		for _, at := range []int{0, 1000, 300 << 10, size} {
			body := io.MultiReader(bytes.NewReader(good[:at]), iotest.ErrReader(broken))
			p := claimcheck.NewPayload(ref, "", io.NopCloser(body))
			p.OnMismatch(func(err error) { t.Fatalf("%s at %d: OnMismatch(%v) for a transport error", name, at, err) })
			if _, err := read(io.Discard, p); !errors.Is(err, broken) {
				t.Fatalf("%s at %d: error %v, want the transport's", name, at, err)
			}
		}
	}
	full := errors.New("disk full")
	p := claimcheck.NewPayload(ref, "", io.NopCloser(bytes.NewReader(good)))
	if _, err := p.WriteTo(&failingWriter{left: 200 << 10, err: full}); !errors.Is(err, full) {
		t.Fatalf("WriteTo to a failing writer: %v, want its error", err)
	}
	if _, err := p.Read(make([]byte, 10)); !errors.Is(err, full) {
		t.Fatalf("Read after a failed WriteTo: %v, want the failure again", err)
	}
}

// Part read with Read, the rest with WriteTo: one payload, verified whole.
func TestPayloadReadThenWriteTo(t *testing.T) {
	good, ref := testPayload(t, 300<<10)
	p := claimcheck.NewPayload(ref, "", io.NopCloser(bytes.NewReader(good)))
	head := make([]byte, 1000)
	if _, err := io.ReadFull(p, head); err != nil {
		t.Fatal(err)
	}
	var rest bytes.Buffer
	if _, err := p.WriteTo(&rest); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(head, rest.Bytes()...), good) {
		t.Fatal("the payload read in two ways differs from the one put")
	}
}

type failingWriter struct {
	left int
	err  error
}

func (w *failingWriter) Write(b []byte) (int, error) {
	if len(b) <= w.left {
		w.left -= len(b)
		return len(b), nil
	}
	n := w.left
	w.left = 0
	return n, w.err
}
