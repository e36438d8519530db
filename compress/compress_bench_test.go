package compress_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/testkit/benchdata"
)

// photos returns a ~1.2 MB JSON document shaped like a typical REST API
// listing (5,000 photo records, pretty-printed the way such APIs answer),
// the kind of payload that gets offloaded. A fixed seed keeps it identical
// from run to run.
func photos() []byte {
	rng := mrand.New(mrand.NewPCG(2026, 1))
	words := strings.Fields(`accusamus beatae ad facilis cum similique qui sunt reprehenderit
		est necessitatibus architecto ut laborum officia porro iusto quasi eius voluptatem
		nihil fugit odit repellendus natus dolorem magnam tempora molestias voluptate
		harum omnis dolore aliquam quia perspiciatis expedita soluta rerum earum ipsam
		sapiente incidunt assumenda distinctio culpa consequatur minima quidem doloribus`)
	type photo struct {
		AlbumID      int    `json:"albumId"`
		ID           int    `json:"id"`
		Title        string `json:"title"`
		URL          string `json:"url"`
		ThumbnailURL string `json:"thumbnailUrl"`
	}
	list := make([]photo, 5000)
	for i := range list {
		title := make([]string, 5+rng.IntN(7))
		for j := range title {
			title[j] = words[rng.IntN(len(words))]
		}
		color := fmt.Sprintf("%06x", rng.IntN(1<<24))
		list[i] = photo{
			AlbumID:      i/50 + 1,
			ID:           i + 1,
			Title:        strings.Join(title, " "),
			URL:          "https://via.placeholder.com/600/" + color,
			ThumbnailURL: "https://via.placeholder.com/150/" + color,
		}
	}
	doc, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		panic(err)
	}
	return doc
}

// BenchmarkCodecs compares zstd (at the level objects are written with) with gzip level 6 on the
// same document, through the package's pooled writers and readers, as the
// server uses them. MB/s are of the original bytes in both directions;
// ratio is original size / stored size.
func BenchmarkCodecs(b *testing.B) {
	doc := photos()
	codecs := []struct{ name, alg string }{{"zstd", compress.Zstd}, {"gzip6", compress.Gzip}}
	stored := make(map[string][]byte)
	for _, c := range codecs {
		stored[c.alg] = encode(b, c.alg, doc)
	}
	ratio := func(alg string) float64 { return float64(len(doc)) / float64(len(stored[alg])) }
	b.Logf("document %d bytes; stored zstd %d, gzip6 %d", len(doc), len(stored[compress.Zstd]), len(stored[compress.Gzip]))

	for _, c := range codecs {
		b.Run("compress/"+c.name, func(b *testing.B) {
			var buf bytes.Buffer
			buf.Grow(len(doc))
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				w, err := compress.NewWriter(c.alg, &buf)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := w.Write(doc); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(ratio(c.alg), "ratio")
		})
	}
	for _, c := range codecs {
		b.Run("decompress/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			src := bytes.NewReader(nil)
			for b.Loop() {
				src.Reset(stored[c.alg])
				r, err := compress.NewReader(c.alg, src)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(doc)) {
					b.Fatalf("decoded %d bytes, %v", n, err)
				}
				r.Close()
			}
			b.ReportMetric(ratio(c.alg), "ratio")
		})
	}
}

// BenchmarkZstdLevels measures zstd's fastest, default and better levels
// on the JSON document of BenchmarkVersusMinIO (benchdata.JSONRecords, 1 MiB)
// and on photos(), through the framed writer with the package's settings
// and the package's reader: compress and decompress MB/s of the original
// bytes, and the ratio. ADR 0135 chose the level from these numbers.
//
//	go test -run '^$' -bench ZstdLevels -count 3 ./compress
func BenchmarkZstdLevels(b *testing.B) {
	docs := []struct {
		name string
		doc  []byte
	}{{"records-1MiB", benchdata.JSONRecords(1 << 20)}, {"photos", photos()}}
	for _, d := range docs {
		for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression} {
			newWriter := compress.ZstdLevelWriters(level)
			var stored bytes.Buffer
			b.Run(fmt.Sprintf("%s/compress/%s", d.name, level), func(b *testing.B) {
				stored.Grow(len(d.doc))
				b.SetBytes(int64(len(d.doc)))
				for b.Loop() {
					stored.Reset()
					w := newWriter(&stored)
					if _, err := w.Write(d.doc); err != nil {
						b.Fatal(err)
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(d.doc))/float64(stored.Len()), "ratio")
			})
			b.Run(fmt.Sprintf("%s/decompress/%s", d.name, level), func(b *testing.B) {
				b.SetBytes(int64(len(d.doc)))
				src := bytes.NewReader(nil)
				for b.Loop() {
					src.Reset(stored.Bytes())
					r, err := compress.NewReader(compress.Zstd, src)
					if err != nil {
						b.Fatal(err)
					}
					if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(d.doc)) {
						b.Fatalf("decoded %d bytes, %v", n, err)
					}
					r.Close()
				}
			})
		}
	}
}

// BenchmarkZstdFrameSizes measures the writer with this package's frames
// (64 KiB, one block of the fastest level each) against frames of two
// blocks and the 256 KiB frames of ADR 0135, on the benchmark's records,
// the REST listing and 4 MiB of the tests' prose: MB/s of the original
// bytes and the ratio.
// Run with -cpu 1 for the CPU a put spends (the frames are encoded in
// the background, so with more CPUs the wall time also shows how they
// spread). ADR 0150 chose the frame size from these numbers.
//
//	go test -run '^$' -bench ZstdFrameSizes -cpu 1 -count 5 ./compress
func BenchmarkZstdFrameSizes(b *testing.B) {
	docs := []struct {
		name string
		doc  []byte
	}{{"records-1MiB", benchdata.JSONRecords(1 << 20)}, {"photos", photos()}, {"prose-4MiB", text(4 << 20)}}
	for _, d := range docs {
		for _, size := range []int{64 << 10, 128 << 10, 256 << 10} {
			b.Run(fmt.Sprintf("%s/%dKiB", d.name, size>>10), func(b *testing.B) {
				var stored bytes.Buffer
				stored.Grow(len(d.doc))
				b.SetBytes(int64(len(d.doc)))
				for b.Loop() {
					stored.Reset()
					w := compress.NewZstdWriterFrames(size, &stored)
					if _, err := w.Write(d.doc); err != nil {
						b.Fatal(err)
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(d.doc))/float64(stored.Len()), "ratio")
			})
		}
	}
}
