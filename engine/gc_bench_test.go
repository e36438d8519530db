package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

// BenchmarkPutDedup1MiB compares put latency for a 1 MiB payload on
// SQLite and files: a miss (new bytes, streamed and stored), a dedup hit
// whose body is still streamed and hashed, and a dedup hit with the digest
// sent first (the body is never read).
//
//	go test -run '^$' -bench PutDedup1MiB -benchtime 200x .
func BenchmarkPutDedup1MiB(b *testing.B) {
	ctx := context.Background()
	s := enginetest.Open(b, engine.Config{
		Clock:      clock.NewFake(t0),
		Namespaces: map[string]claimcheck.Policy{"b": {Compression: claimcheck.CompressionNone}},
	})
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	if _, err := s.Put(ctx, "b", bytes.NewReader(data), claimcheck.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	digest := claimcheck.DigestOf(data)
	fresh := append([]byte(nil), data...)
	n := uint64(0)
	for _, bc := range []struct {
		name string
		put  func() (claimcheck.Ref, error)
	}{
		{"miss", func() (claimcheck.Ref, error) {
			n++
			binary.LittleEndian.PutUint64(fresh, n) // new content every time
			return s.Put(ctx, "b", bytes.NewReader(fresh), claimcheck.PutOptions{})
		}},
		{"hit-streamed", func() (claimcheck.Ref, error) {
			return s.Put(ctx, "b", bytes.NewReader(data), claimcheck.PutOptions{})
		}},
		{"hit-digest-first", func() (claimcheck.Ref, error) {
			return s.Put(ctx, "b", bytes.NewReader(data), claimcheck.PutOptions{Digest: digest, Size: int64(len(data))})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			start := time.Now()
			for b.Loop() {
				if _, err := bc.put(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/put")
		})
	}
}
