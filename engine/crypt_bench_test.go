package engine_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

// BenchmarkEncryption1MiB measures what encryption at rest costs: a put +
// redeem of 1 MiB in an encrypted namespace against the same in a plain
// one, interleaved in one loop so both see the same machine load. Two
// pairs: compression none on random bytes (the cipher's cost alone), and
// zstd on a JSON document (the usual case: compress, then encrypt). File
// backend, SQLite, dedup off. The ratios are plain time / encrypted time
// from the summed times.
//
//	go test -run '^$' -bench Encryption1MiB -count 3 .
func BenchmarkEncryption1MiB(b *testing.B) {
	ctx := context.Background()
	random := randomBytes(b, 1<<20)
	doc := jsonDoc(1 << 20)[:1<<20]
	off := false
	s := enginetest.Open(b, engine.Config{MasterKey: testMasterKey,
		Namespaces: map[string]claimcheck.Policy{
			"raw":      {Compression: claimcheck.CompressionNone, Dedup: &off},
			"raw-enc":  {Compression: claimcheck.CompressionNone, Dedup: &off, Encryption: claimcheck.EncryptionAES256GCM},
			"zstd":     {Compression: claimcheck.CompressionZstd, Dedup: &off},
			"zstd-enc": {Compression: claimcheck.CompressionZstd, Dedup: &off, Encryption: claimcheck.EncryptionAES256GCM},
		}})
	roundTrip := func(ns string, payload []byte) {
		ref, err := s.Put(ctx, ns, bytes.NewReader(payload), claimcheck.PutOptions{Size: int64(len(payload))})
		if err != nil {
			b.Fatal(err)
		}
		p, err := s.Redeem(ctx, ref)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, p); err != nil || n != int64(len(payload)) {
			b.Fatal(n, err)
		}
		p.Close()
	}
	names := []string{"raw", "raw-enc", "zstd", "zstd-enc"}
	times := make([]time.Duration, len(names))
	b.SetBytes(4 << 20)
	for b.Loop() {
		for i, ns := range names {
			payload := random
			if i >= 2 {
				payload = doc
			}
			start := time.Now()
			roundTrip(ns, payload)
			times[i] += time.Since(start)
		}
	}
	for i, ns := range names {
		b.ReportMetric(float64(b.N)/times[i].Seconds()*1.048576, ns+"-MB/s")
	}
	b.ReportMetric(times[1].Seconds()/times[0].Seconds(), "enc/plain-raw")
	b.ReportMetric(times[3].Seconds()/times[2].Seconds(), "enc/plain-zstd")
}
