package compress

import (
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// SampleSize is how much of a payload Choose looks at.
const SampleSize = 64 << 10

// sampler compresses samples for Choose. EncodeAll is safe for concurrent
// use; one encoder per CPU runs at once and the rest wait, which is cheaper
// than an encoder per call. The window only needs to cover a sample.
var sampler = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithWindowSize(SampleSize),
		zstd.WithLowerEncoderMem(true),
		zstd.WithEncoderCRC(false),
	)
	if err != nil {
		panic(err) // constant options
	}
	return e
})

// Choose returns the algorithm to store a payload with. Zstd, gzip and none
// are returned as they are (as is any other value, which NewWriter then
// refuses). For auto, sample is the start of the payload (Choose uses at
// most SampleSize bytes of it):
//
// The rule: compress the sample with zstd's fastest level; if that saves
// at least 10% of the sample, the answer is zstd, otherwise none. Data that
// is already compressed, encrypted or random saves nothing and is stored as
// it is, so neither side pays for a codec that only adds framing. An empty
// sample (an empty payload) is stored as none too.
//
// The fastest level is cheap enough to run on every put, and it is the
// level NewWriter writes with (ADR 0135), so the sample's saving is what
// the object gets, give or take the framing; the test errs towards "none"
// only for data that barely compresses.
func Choose(setting string, sample []byte) string {
	if setting != Auto {
		return setting
	}
	if len(sample) > SampleSize {
		sample = sample[:SampleSize]
	}
	if len(sample) == 0 {
		return None
	}
	// A zstd frame of the sample is never much larger than the sample, so
	// one allocation of its size (plus framing) covers every outcome.
	out := sampler().EncodeAll(sample, make([]byte, 0, len(sample)+len(sample)/128+64))
	if len(out) <= len(sample)-len(sample)/10 {
		return Zstd
	}
	return None
}
