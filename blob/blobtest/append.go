package blobtest

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
)

// errCut stands for a client whose connection broke mid-body.
var errCut = errors.New("blobtest: connection cut")

// cutReader yields n bytes of data, then fails with errCut.
type cutReader struct {
	r io.Reader
	n int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, errCut
	}
	if len(p) > c.n {
		p = p[:c.n]
	}
	m, err := c.r.Read(p)
	c.n -= m
	return m, err
}

// testAppend checks an Appender the way resumable uploads use it: the
// caller records each offset durable reports and always continues from
// the last one recorded; chunks cross part boundaries, a broken body
// keeps what was recorded, a refused durable (a chunk whose checksum
// did not match) leaves the recorded offset where it was, and the
// completed object is exactly the bytes appended. Abort leaves nothing.
func testAppend(t *testing.T, h *harness) {
	ap := blob.AbilitiesOf(h.store).Appender
	if ap == nil {
		t.Skipf("%T is not an Appender", h.store)
	}
	// Two whole S3 parts and a bit: chunks land inside parts, on their
	// boundaries and across them.
	data := payload(2*5<<20+123_457, 23)
	t.Run("Resume", func(t *testing.T) { testAppendResume(t, h, ap, data) })
	t.Run("TooMuch", func(t *testing.T) { testAppendTooMuch(t, h, ap) })
	t.Run("Empty", func(t *testing.T) { testAppendEmpty(t, h, ap) })
	t.Run("Abort", func(t *testing.T) { testAppendAbort(t, h, ap, data) })
}

// testAppendResume appends chunks that land inside parts, on their
// boundaries and across them, a refused one and a broken one, and
// checks the completed object.
func testAppendResume(t *testing.T, h *harness, ap blob.Appender, data []byte) {
	ctx := t.Context()
	size := int64(len(data))
	key := h.key("appended")
	h.track(key)
	handle, err := ap.BeginAppend(ctx, key, size)
	if err != nil {
		t.Fatalf("BeginAppend: %v", err)
	}
	var recorded int64
	record := func(o int64) error {
		if o <= recorded || o > size {
			t.Errorf("durable(%d) after %d recorded, size %d", o, recorded, size)
		}
		recorded = o
		return nil
	}
	appendChunk := func(r io.Reader) (int64, error) {
		t.Helper()
		got, err := ap.Append(ctx, key, handle, size, recorded, r, record)
		if got != recorded {
			t.Fatalf("Append returned offset %d, durable recorded %d", got, recorded)
		}
		return got, err
	}
	// 3 MiB: inside the first part.
	if _, err := appendChunk(bytes.NewReader(data[:3<<20])); err != nil {
		t.Fatalf("Append: %v", err)
	}
	// A chunk whose durable is refused counts as never sent.
	refused := errors.New("checksum mismatch")
	got, err := ap.Append(ctx, key, handle, size, recorded, bytes.NewReader(bytes.Repeat([]byte{0xff}, 4<<20)),
		func(int64) error { return refused })
	if !errors.Is(err, refused) || got != 3<<20 {
		t.Fatalf("refused Append = %d, %v; want %d and the durable's error", got, err, 3<<20)
	}
	// A body cut after 4 MiB (past the first part's end) keeps what
	// arrived.
	got, err = appendChunk(&cutReader{r: bytes.NewReader(data[recorded:]), n: 4 << 20})
	if !errors.Is(err, errCut) || got != 7<<20 {
		t.Fatalf("cut Append = %d, %v; want %d and the reader's error", got, err, 7<<20)
	}
	// The rest in one go, past the second part into the last.
	if _, err := appendChunk(bytes.NewReader(data[recorded:])); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if recorded != size {
		t.Fatalf("recorded %d of %d bytes", recorded, size)
	}
	if err := ap.CompleteAppend(ctx, key, handle, size); err != nil {
		t.Fatalf("CompleteAppend: %v", err)
	}
	if got := h.get(t, key); !bytes.Equal(got, data) {
		t.Fatalf("object has %d bytes, differing from the %d appended", len(got), len(data))
	}
	// A repeated completion (its first answer lost) succeeds.
	if err := ap.CompleteAppend(ctx, key, handle, size); err != nil {
		t.Fatalf("CompleteAppend again: %v", err)
	}
}

// testAppendTooMuch checks that an Append past the declared size fails.
func testAppendTooMuch(t *testing.T, h *harness, ap blob.Appender) {
	ctx := t.Context()
	key := h.key("toomuch")
	h.track(key)
	handle, err := ap.BeginAppend(ctx, key, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The abort only tidies up; the test is the refused Append.
	defer func() { _ = ap.AbortAppend(ctx, key, handle) }()
	if _, err := ap.Append(ctx, key, handle, 10, 0, bytes.NewReader(make([]byte, 11)), func(int64) error { return nil }); err == nil {
		t.Fatal("Append of 11 bytes to an object of 10 succeeded")
	}
}

// testAppendEmpty completes an object of no bytes.
func testAppendEmpty(t *testing.T, h *harness, ap blob.Appender) {
	ctx := t.Context()
	key := h.key("empty")
	h.track(key)
	handle, err := ap.BeginAppend(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ap.CompleteAppend(ctx, key, handle, 0); err != nil {
		t.Fatalf("CompleteAppend of nothing: %v", err)
	}
	if got := h.get(t, key); len(got) != 0 {
		t.Fatalf("empty object has %d bytes", len(got))
	}
}

// testAppendAbort aborts after 0, some and more than a part's bytes:
// nothing stays, a second abort succeeds, and Append fails after it.
func testAppendAbort(t *testing.T, h *harness, ap blob.Appender, data []byte) {
	ctx := t.Context()
	size := int64(len(data))
	for _, n := range []int{0, 1000, 5<<20 + 1} {
		key := h.key("aborted")
		h.track(key)
		handle, err := ap.BeginAppend(ctx, key, size)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			if _, err := ap.Append(ctx, key, handle, size, 0, bytes.NewReader(data[:n]), func(int64) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		if err := ap.AbortAppend(ctx, key, handle); err != nil {
			t.Fatalf("AbortAppend after %d bytes: %v", n, err)
		}
		h.wantNotFound(t, key)
		if err := ap.AbortAppend(ctx, key, handle); err != nil {
			t.Fatalf("AbortAppend again: %v", err)
		}
		if _, err := ap.Append(ctx, key, handle, size, int64(n), bytes.NewReader(data[n:n+10]), func(int64) error { return nil }); err == nil {
			t.Fatalf("Append after AbortAppend succeeded")
		}
		h.wantNotFound(t, key)
	}
}
