package compress_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/claimcheck/claimcheck/compress"
)

// Pooled codecs must not leave goroutines behind (zstd's concurrent modes
// would).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var codecs = []string{compress.Zstd, compress.Gzip, compress.None}

// corpus is compressible, deterministic text, built once: generating it
// per test dominates the run time under -race.
var corpus = sync.OnceValue(func() []byte {
	rng := mrand.New(mrand.NewPCG(1, 2))
	words := strings.Fields("claim check reference payload namespace blob digest sha256 zstd gzip expires created size stored")
	var b bytes.Buffer
	for b.Len() < 10<<20 {
		b.WriteString(`{"id":`)
		b.WriteString(strconv.Itoa(rng.IntN(100000)))
		b.WriteString(`,"word":"`)
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteString(`"},`)
	}
	return b.Bytes()
})

// text returns n (at most 10 MiB) bytes of compressible text.
func text(n int) []byte { return bytes.Clone(corpus()[:n]) }

// random returns n incompressible bytes.
func random(n int) []byte {
	b := make([]byte, n)
	_, _ = mrand.NewChaCha8([32]byte{byte(n)}).Read(b)
	return b
}

func encode(t testing.TB, alg string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := compress.NewWriter(alg, &buf)
	if err != nil {
		t.Fatal(err)
	}
	// Uneven chunks, as a network stream delivers them.
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 32_771)
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatalf("%s: Write: %v", alg, err)
		}
		rest = rest[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatalf("%s: Close: %v", alg, err)
	}
	return buf.Bytes()
}

func decode(alg string, stored []byte) ([]byte, error) {
	r, err := compress.NewReader(alg, bytes.NewReader(stored))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func TestRoundTrip(t *testing.T) {
	for _, alg := range codecs {
		sizes := []int{0, 1, 100, 64 << 10, 1<<20 + 7}
		if alg == compress.Zstd {
			sizes = append(sizes, 9<<20) // several windows long
		}
		for _, n := range sizes {
			for kind, gen := range map[string]func(int) []byte{"text": text, "random": random} {
				t.Run(fmt.Sprintf("%s/%s/%d", alg, kind, n), func(t *testing.T) {
					t.Parallel()
					want := gen(n)
					stored := encode(t, alg, want)
					got, err := decode(alg, stored)
					if err != nil {
						t.Fatalf("decode: %v", err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("decoded %d bytes, want the %d encoded", len(got), len(want))
					}
					if kind == "text" && alg != compress.None && n >= 64<<10 && len(stored) > n/2 {
						t.Errorf("stored %d bytes for %d bytes of text", len(stored), n)
					}
				})
			}
		}
	}
}

func TestUnknownAlgorithm(t *testing.T) {
	for _, alg := range []string{"", "lz4", "ZSTD", compress.Auto} {
		_, werr := compress.NewWriter(alg, io.Discard)
		_, rerr := compress.NewReader(alg, strings.NewReader(""))
		for _, err := range []error{werr, rerr} {
			if !errors.Is(err, compress.ErrUnknownAlgorithm) || !strings.Contains(err.Error(), fmt.Sprintf("%q", alg)) {
				t.Errorf("%q: error %v, want ErrUnknownAlgorithm naming it", alg, err)
			}
		}
	}
}

// TestCorrupt damages valid streams in many ways. The invariant: a read
// either fails with ErrCorrupt or returns exactly the original bytes (a
// flipped bit in a gzip header's timestamp harms nothing). Short or wrong
// data with a nil error is the bug this guards against.
func TestCorrupt(t *testing.T) {
	want := text(64 << 10)
	for _, alg := range []string{compress.Zstd, compress.Gzip} {
		stored := encode(t, alg, want)
		damaged := map[string][]byte{
			"empty":          {},
			"truncated half": stored[:len(stored)/2],
			"last byte cut":  stored[:len(stored)-1],
			"header only":    stored[:4],
			"garbage after":  append(bytes.Clone(stored), "trailing garbage"...),
			"not compressed": []byte("plain text is not a " + alg + " stream"),
		}
		for i := 0; i < len(stored); i += max(1, len(stored)/150) {
			d := bytes.Clone(stored)
			d[i] ^= 0x5a
			damaged[fmt.Sprintf("flip %d", i)] = d
		}
		for name, d := range damaged {
			got, err := decode(alg, d)
			if err == nil {
				if !bytes.Equal(got, want) {
					t.Errorf("%s/%s: %d bytes and no error, want ErrCorrupt", alg, name, len(got))
				}
				continue
			}
			if !errors.Is(err, compress.ErrCorrupt) {
				t.Errorf("%s/%s: error %v does not match ErrCorrupt", alg, name, err)
			}
		}
	}
}

// failing fails with errBackend after n bytes, like a dropped connection.
type failing struct {
	r io.Reader
	n int
}

var errBackend = errors.New("connection reset")

func (f *failing) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errBackend
	}
	p = p[:min(len(p), f.n)]
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

// TestSourceError checks that a failing source is reported as itself, not
// as corruption: the engine answers "unavailable, retry" for one and
// "checksum mismatch" for the other.
func TestSourceError(t *testing.T) {
	for _, alg := range codecs {
		stored := encode(t, alg, text(300<<10))
		for _, at := range []int{0, 10, len(stored) / 2} {
			r, err := compress.NewReader(alg, &failing{r: bytes.NewReader(stored), n: at})
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(r)
			r.Close()
			if !errors.Is(err, errBackend) || errors.Is(err, compress.ErrCorrupt) {
				t.Errorf("%s, failing at %d: error %v, want the source's error", alg, at, err)
			}
		}
	}
}

type closeRecorder struct {
	bytes.Buffer
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestClose(t *testing.T) {
	for _, alg := range codecs {
		t.Run(alg, func(t *testing.T) {
			dst := new(closeRecorder)
			w, err := compress.NewWriter(alg, dst)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if dst.closed {
				t.Error("closing the writer closed the underlying writer")
			}
			if err := w.Close(); err != nil {
				t.Errorf("second Close = %v, want nil", err)
			}
			if alg != compress.None {
				if _, err := w.Write([]byte("late")); err == nil {
					t.Error("Write after Close = nil error")
				}
			}

			src := &closeRecorder{Buffer: *bytes.NewBuffer(dst.Bytes())}
			r, err := compress.NewReader(alg, src)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := io.ReadAll(r); err != nil || string(got) != "hello" {
				t.Fatalf("read %q, %v", got, err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if src.closed {
				t.Error("closing the reader closed its source")
			}
			if alg != compress.None {
				if _, err := r.Read(make([]byte, 1)); err == nil {
					t.Error("Read after Close = nil error")
				}
			}
		})
	}
}

// TestConcurrentStreams shares the pools (and zstd's frame encoders and
// buffers) between many goroutines; run with -race. zstd payloads from
// one frame to several. Readers closed halfway must not disturb the next
// user of their decoder.
func TestConcurrentStreams(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 24 {
		alg := codecs[i%len(codecs)]
		wg.Go(func() {
			for j := range 5 {
				want := text(50<<10 + i*30_000 + j)
				stored := encode(t, alg, want)
				if j%2 == 1 {
					r, _ := compress.NewReader(alg, bytes.NewReader(stored))
					_, _ = r.Read(make([]byte, 100))
					r.Close()
					continue
				}
				got, err := decode(alg, stored)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes, %v; want %d bytes", alg, len(got), err, len(want))
				}
			}
		})
	}
	wg.Wait()
}

func TestChoose(t *testing.T) {
	zstdData := encode(t, compress.Zstd, text(200<<10))
	for _, tc := range []struct {
		name    string
		setting string
		sample  []byte
		want    string
	}{
		{"zstd as set", compress.Zstd, random(1000), compress.Zstd},
		{"gzip as set", compress.Gzip, random(1000), compress.Gzip},
		{"none as set", compress.None, text(1000), compress.None},
		{"unknown passes through", "lz4", text(1000), "lz4"},
		{"text", compress.Auto, text(64 << 10), compress.Zstd},
		{"short text", compress.Auto, text(300), compress.Zstd},
		{"random", compress.Auto, random(64 << 10), compress.None},
		{"already compressed", compress.Auto, zstdData, compress.None},
		{"empty", compress.Auto, nil, compress.None},
		{"only the first 64 KiB count", compress.Auto, append(random(64<<10), text(1<<20)...), compress.None},
		{"tiny", compress.Auto, []byte("a"), compress.None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compress.Choose(tc.setting, tc.sample); got != tc.want {
				t.Errorf("Choose(%q, %d bytes) = %q, want %q", tc.setting, len(tc.sample), got, tc.want)
			}
		})
	}
}

// FuzzReader feeds arbitrary bytes to every decoder: no panic, no hang,
// and bounded output (a zstd frame can legally expand a few bytes into
// megabytes, so the copy is capped).
func FuzzReader(f *testing.F) {
	for _, alg := range []string{compress.Zstd, compress.Gzip} {
		f.Add(encode(f, alg, text(5000)))
		f.Add(encode(f, alg, nil))
	}
	f.Add([]byte{})
	f.Add([]byte("\x28\xb5\x2f\xfd")) // zstd magic alone
	f.Add([]byte("\x1f\x8b\x08\x00")) // gzip magic alone
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, alg := range codecs {
			r, err := compress.NewReader(alg, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.CopyN(io.Discard, r, 64<<20)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzRoundTrip checks that whatever goes in comes back out.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add(text(3000))
	f.Add(random(3000))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, alg := range codecs {
			got, err := decode(alg, encode(t, alg, data))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: %d bytes, %v; want %d bytes", alg, len(got), err, len(data))
			}
		}
	})
}
