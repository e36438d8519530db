package compress

import (
	"io"

	"github.com/klauspost/compress/zstd"
)

// ZstdLevel is the level NewWriter writes zstd objects with.
const ZstdLevel = zstdLevel

// ZstdLevelWriters returns a NewWriter("zstd") at another level, for the
// benchmark that chose the level: the same frames, seek table and encoder
// settings.
func ZstdLevelWriters(level zstd.EncoderLevel) func(w io.Writer) io.WriteCloser {
	e := newZstdEncoder(level)
	return func(w io.Writer) io.WriteCloser {
		return &encoder{alg: Zstd, w: newFramedZstd(e, w), put: func() {}}
	}
}

// NewZstdWriterFrames is NewWriter("zstd") with frames of frameSize
// payload bytes: 1 MiB writes objects as they were before ADR 0135.
func NewZstdWriterFrames(frameSize int, w io.Writer) io.WriteCloser {
	f := newFramedZstd(zstdEncoder(), w)
	f.size = frameSize
	return &encoder{alg: Zstd, w: f, put: func() {}}
}
