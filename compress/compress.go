// Package compress holds the codecs of stored objects: zstd (the default),
// gzip (level 6, for compatibility) and none, plus the "auto" choice that
// skips compression when a sample of the payload does not shrink.
//
// Codecs are streaming in both directions: the engine never holds a whole
// payload in memory. A codec's memory is bounded by its window and, for
// zstd, its frames (frames.go), not by the payload. Decoders, gzip
// encoders and frame buffers are pooled (Close returns them), and zstd
// frames are encoded by one shared encoder with a state per core, so a
// busy server reuses a handful instead of allocating megabytes per request.
//
// Neither side owns the stream it wraps: closing a writer flushes the
// codec's trailer into the underlying writer but does not close it, and
// closing a reader does not close its source.
package compress

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Algorithm names, as stored in references.
const (
	Zstd = "zstd"
	Gzip = "gzip"
	None = "none"
	// Auto is a setting, never a stored algorithm: Choose turns it into
	// Zstd or None.
	Auto = "auto"
)

// GzipLevel is the gzip level; 6 is gzip's own default, which the seed's
// references were written with.
const GzipLevel = 6

var (
	// ErrUnknownAlgorithm is returned for an algorithm name this package
	// does not know.
	ErrUnknownAlgorithm = errors.New("compress: unknown algorithm")
	// ErrCorrupt is returned when the compressed bytes are damaged or
	// truncated. Errors of the underlying reader are passed through
	// instead, so a caller can tell bad data from a failed read.
	ErrCorrupt = errors.New("compress: corrupt stream")

	errClosed = errors.New("compress: use after Close")
)

// Window sizes. zstd's encoder and decoder each hold about one window of
// history, so the window, not the payload, bounds a stream's memory: with
// 2 MiB an encoder costs about 4 MiB and a decoder about 2.5 MiB, against
// 10 and 8.5 MiB with zstd's default 8 MiB, for the same ratio on JSON-like
// payloads whose repeats are close together. That matters when the server
// must stream a 1 GiB payload in 64 MiB of RSS next to the S3 part
// buffers. The decoder accepts up to 8 MiB, so objects written with a
// larger window later (or by the zstd CLI at its default level) still
// decode; a larger window can only come from a stream we did not write,
// and refusing it stops a hostile frame header from making us allocate
// hundreds of megabytes.
const (
	zstdWindow    = 2 << 20
	zstdMaxWindow = 8 << 20
)

// zstdLevel is the zstd level objects are written with: zstd's fastest
// (about zstd's level 1). On the JSON the benchmarks use it compresses
// 20-30% faster than the default level (level 3) at a ratio within a few
// percent of it (better on one corpus, worse on the other), and the
// compression is the largest cost of a put of compressible bytes; the
// decoder is as fast either way (ADR 0135).
const zstdLevel = zstd.SpeedFastest

// zstdEncoder is the encoder of every zstd object: frames are encoded
// with EncodeAll, which is safe for concurrent use (framedZstd).
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder { return newZstdEncoder(zstdLevel) })

var (
	zstdDecoders = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdMaxWindow),
		)
		if err != nil {
			panic(err)
		}
		return d
	}}
	gzipWriters = sync.Pool{New: func() any {
		w, err := gzip.NewWriterLevel(nil, GzipLevel)
		if err != nil {
			panic(err)
		}
		return w
	}}
	gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}
)

// newZstdEncoder returns an encoder of level with the package's settings,
// for EncodeAll: it runs at most GOMAXPROCS encodes at once, each with an
// encoder state of its own, kept between calls. Zero frames: an empty
// payload still gets a frame.
func newZstdEncoder(level zstd.EncoderLevel) *zstd.Encoder {
	e, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(level),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithWindowSize(zstdWindow),
		zstd.WithLowerEncoderMem(true),
		zstd.WithZeroFrames(true),
	)
	if err != nil {
		panic(err) // constant options
	}
	return e
}

func unknown(alg string) error {
	return fmt.Errorf("%w %q (want %s, %s or %s)", ErrUnknownAlgorithm, alg, Zstd, Gzip, None)
}

// NewWriter returns a writer that compresses into w with alg (zstd, gzip
// or none). Close must be called to finish the stream; it does not close w.
func NewWriter(alg string, w io.Writer) (io.WriteCloser, error) {
	switch alg {
	case Zstd:
		return &encoder{alg: alg, w: newFramedZstd(zstdEncoder(), w), put: func() {}}, nil
	case Gzip:
		g := gzipWriters.Get().(*gzip.Writer)
		g.Reset(w)
		return &encoder{alg: alg, w: g, put: func() {
			g.Reset(nil)
			gzipWriters.Put(g)
		}}, nil
	case None:
		return &encoder{alg: alg, w: nopCloser{w}, put: func() {}}, nil
	default:
		return nil, unknown(alg)
	}
}

// NewZstdOrNone returns a writer into w that stores the payload as zstd
// where zstd saves bytes, and as it is where it does not: the payload's
// first frame decides (ADR 0165). Bytes that do not shrink by 1/32 in
// the first FrameSize of them (random, encrypted or already compressed
// ones) are written to w unchanged, with no framing and no seek table,
// and none of the rest is encoded. chosen is called once with Zstd or
// None before the first byte reaches w, so the caller knows what w is
// about to receive; a stream that fails before that never calls it.
// Close finishes the stream; it does not close w.
func NewZstdOrNone(w io.Writer, chosen func(alg string)) io.WriteCloser {
	f := newFramedZstd(zstdEncoder(), w)
	f.orNone, f.chosen = true, chosen
	return &encoder{alg: Zstd, w: f, put: func() {}}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// encoder owns a pooled codec until Close. After Close, w is nil, so a
// second Close or a late Write cannot touch a codec that another stream may
// already be using.
type encoder struct {
	alg string
	w   io.WriteCloser
	put func()
}

func (e *encoder) Write(p []byte) (int, error) {
	if e.w == nil {
		return 0, errClosed
	}
	n, err := e.w.Write(p)
	if err != nil {
		err = fmt.Errorf("compress: %s: %w", e.alg, err)
	}
	return n, err
}

func (e *encoder) Close() error {
	if e.w == nil {
		return nil
	}
	err := e.w.Close()
	e.w = nil
	e.put()
	if err != nil {
		return fmt.Errorf("compress: %s: %w", e.alg, err)
	}
	return nil
}

// NewReader returns a reader that decompresses r with alg (zstd, gzip or
// none). Nothing is read from r before the first Read. Close returns the
// decoder to its pool; it does not close r.
//
// A stream that is damaged, truncated (even to zero bytes) or followed by
// garbage makes Read fail with an error matching ErrCorrupt; it never ends
// early with io.EOF. zstd streams carry a checksum of their content, gzip
// streams a CRC-32 and the length.
func NewReader(alg string, r io.Reader) (io.ReadCloser, error) {
	switch alg {
	case Zstd:
		return &decoder{alg: alg, src: source{r: r, tail: &tail{}}}, nil
	case Gzip:
		return &decoder{alg: alg, src: source{r: r}}, nil
	case None:
		return io.NopCloser(r), nil
	default:
		return nil, unknown(alg)
	}
}

// source counts what the codec read and keeps the error of the underlying
// reader, so that decoder can tell a failed read from bad data.
type source struct {
	r   io.Reader
	n   int64
	err error
	// tail keeps the last bytes read (zstd only), where a framed object's
	// seek table is: it is checked at the end (checkSeekTable).
	tail *tail
}

func (s *source) Read(p []byte) (int, error) {
	if s.r == nil {
		return 0, errClosed
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	if s.tail != nil {
		s.tail.write(p[:n])
	}
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

type decoder struct {
	alg string
	src source
	// dec is set by the first Read and cleared by Close.
	dec    io.Reader
	out    int64 // bytes decoded
	put    func()
	err    error // sticky: a failed stream stays failed
	closed bool
}

func (d *decoder) start() error {
	switch d.alg {
	case Zstd:
		z := zstdDecoders.Get().(*zstd.Decoder)
		d.put = func() {
			_ = z.Reset(nil) // drop the source
			zstdDecoders.Put(z)
		}
		d.dec = z
		return z.Reset(&d.src)
	default: // Gzip
		g := gzipReaders.Get().(*gzip.Reader)
		d.put = func() { gzipReaders.Put(g) }
		d.dec = g
		// Reset reads the header, so an empty source fails here.
		return g.Reset(&d.src)
	}
}

func (d *decoder) Read(p []byte) (int, error) {
	if d.closed {
		return 0, errClosed
	}
	if d.err != nil {
		return 0, d.err
	}
	if d.dec == nil {
		if err := d.start(); err != nil {
			d.err = d.failure(err)
			return 0, d.err
		}
	}
	n, err := d.dec.Read(p)
	d.out += int64(n)
	switch {
	case err == nil:
	case err == io.EOF && d.src.n == 0:
		// A stored object is never empty once compressed: zstd and gzip
		// both write a header for an empty payload.
		d.err = d.failure(io.ErrUnexpectedEOF)
		err = d.err
	case err == io.EOF && d.src.tail != nil:
		// The frames decoded and their checksums matched; the seek
		// table, which the decoder skipped, must describe them.
		if terr := checkSeekTable(d.src.tail.bytes(), d.src.n, d.out, 0); terr != nil {
			d.err = terr
			err = terr
		}
	case err == io.EOF:
	default:
		d.err = d.failure(err)
		err = d.err
	}
	return n, err
}

// failure classifies err from the codec: the source's own error if the
// source failed, else corruption.
func (d *decoder) failure(err error) error {
	if d.src.err != nil {
		return d.src.err
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, d.alg, err)
}

func (d *decoder) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	d.src.r = nil
	if d.put != nil {
		d.put()
	}
	d.dec, d.put = nil, nil
	return nil
}
