package compress

import (
	"io"

	"github.com/klauspost/compress/zstd"
)

// ZstdLevel is the level NewWriter writes zstd objects with.
const ZstdLevel = zstdLevel

// ZstdLevelWriters returns a NewWriter("zstd") at another level, for the
// benchmark that chose the level: the same frames, seek table and encoder
// settings. Its writers share one encoder, so one may be open at a time.
func ZstdLevelWriters(level zstd.EncoderLevel) func(w io.Writer) io.WriteCloser {
	e := newZstdEncoder(level)
	return func(w io.Writer) io.WriteCloser {
		return &encoder{alg: Zstd, w: newFramedZstd(e, w), put: func() { e.Reset(nil) }}
	}
}
