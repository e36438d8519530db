package compress

import (
	"bytes"
	mrand "math/rand/v2"
	"testing"
)

// A tail keeps exactly the last limit bytes of what was written, however
// the writes are cut: while it grows, when it turns into a ring and after.
func TestTailKeepsTheLastBytes(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(3, 4))
	for _, limit := range []int{1, 17, 145, 4096, tailStart + 1000} {
		want := limit
		for _, maxWrite := range []int{1, 100, want / 2, want, 3 * want} {
			maxWrite = max(maxWrite, 1)
			if want > 4096 && maxWrite < want/2 {
				continue // a megabyte a byte at a time: slow, and nothing new
			}
			tl := &tail{limit: limit}
			var all []byte
			for len(all) < 3*want+1000 {
				p := make([]byte, rng.IntN(maxWrite+1))
				for i := range p {
					p[i] = byte(rng.Uint32())
				}
				tl.write(p)
				all = append(all, p...)
				got := tl.bytes()
				exp := all[max(0, len(all)-want):]
				if !bytes.Equal(got, exp) {
					t.Fatalf("limit %d, writes up to %d: after %d bytes kept %d bytes, not the last %d", limit, maxWrite, len(all), len(got), len(exp))
				}
			}
		}
	}
}

// A frame of bytes that do not compress fits an out buffer of
// maxFrameOut, so the pooled buffers never grow (or get allocated anew).
func TestIncompressibleFrameFitsItsBuffer(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(5, 6))
	in := make([]byte, FrameSize)
	for i := range in {
		in[i] = byte(rng.Uint32())
	}
	out := zstdEncoder().EncodeAll(in, make([]byte, 0, maxFrameOut))
	if len(out) > maxFrameOut {
		t.Fatalf("a frame of random bytes encodes to %d bytes, over maxFrameOut %d", len(out), maxFrameOut)
	}
}
