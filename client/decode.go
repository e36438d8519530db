package client

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/claimcheck/claimcheck"
)

// A redeem asks for Accept-Encoding: zstd, and the server may then send a
// payload stored as zstd as the frames it is stored in (ADR 0136): the
// wire carries the compressed bytes, and the server neither decompresses
// nor hashes them. The verifying Payload sits on top of the decoder, so
// the guarantee is unchanged: Read ends in io.EOF only once the decoded
// bytes matched the reference's size and sha256. Every frame's own
// checksum is checked as it decodes.

// zstdMaxWindow bounds the window a frame may ask for, so that a hostile
// frame header cannot make the client allocate hundreds of megabytes. The
// server writes 2 MiB windows; 8 MiB is zstd's default.
const zstdMaxWindow = 8 << 20

// zstdDecoders are reused across redeems. Concurrency 1 decodes in Read:
// no goroutines, so a decoder the GC drops leaks nothing.
var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
	)
	if err != nil {
		panic(err) // constant options
	}
	return d
}}

// zstdBody decodes a zstd response body. Errors of the body itself (the
// transport, the server's trailer) pass through as they are; a stream
// that does not decode is ErrChecksumMismatch, as altered bytes are.
type zstdBody struct {
	src  *errSource
	body io.Closer
	id   string
	dec  *zstd.Decoder
	err  error
}

func newZstdBody(body io.ReadCloser, id string) *zstdBody {
	return &zstdBody{src: &errSource{r: body}, body: body, id: id}
}

func (z *zstdBody) Read(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	if z.dec == nil {
		z.dec = zstdDecoders.Get().(*zstd.Decoder)
		if err := z.dec.Reset(z.src); err != nil {
			z.err = z.failure(err)
			return 0, z.err
		}
	}
	n, err := z.dec.Read(p)
	if err != nil && err != io.EOF {
		z.err = z.failure(err)
		return n, z.err
	}
	return n, err
}

func (z *zstdBody) failure(err error) error {
	if z.src.err != nil {
		return z.src.err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("claim %s: %w: the zstd stream does not decode: %w", z.id, claimcheck.ErrChecksumMismatch, err)
}

func (z *zstdBody) Close() error {
	if z.dec != nil {
		_ = z.dec.Reset(nil)
		zstdDecoders.Put(z.dec)
		z.dec = nil
		if z.err == nil {
			z.err = errors.New("read after Close")
		}
	}
	return z.body.Close()
}

// errSource remembers the first error of r other than io.EOF.
type errSource struct {
	r   io.Reader
	err error
}

func (s *errSource) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}
