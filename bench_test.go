package claimcheck_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/server"
)

// BenchmarkPutRedeem1MiB compares, in one run, a put + redeem of 1 MiB
// through the engine and through the HTTP server and client with writing
// and reading the same bytes with gocloud.dev/blob directly (the raw
// baseline, with the same fileblob options as blob.Open). File backend,
// compression none, dedup off, so every
// iteration writes and reads one object. Targets: engine ≥ 0.8× raw,
// HTTP ≥ 0.6× raw (docs/PERFORMANCE.md).
//
//	go test -run '^$' -bench PutRedeem1MiB -count 5 .
func BenchmarkPutRedeem1MiB(b *testing.B) {
	payload := randomBytes(b, 1<<20)
	ctx := context.Background()
	nodedup := false
	policy := claimcheck.Policy{Compression: claimcheck.CompressionNone, Dedup: &nodedup}

	b.Run("raw-gocloud", func(b *testing.B) {
		bucket, err := fileblob.OpenBucket(b.TempDir(), &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
		if err != nil {
			b.Fatal(err)
		}
		defer bucket.Close()
		b.SetBytes(int64(len(payload)))
		for i := 0; b.Loop(); i++ {
			key := fmt.Sprintf("bench/%d", i)
			if err := bucket.WriteAll(ctx, key, payload, &gcblob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
				b.Fatal(err)
			}
			r, err := bucket.NewReader(ctx, key, nil)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(payload)) {
				b.Fatal(n, err)
			}
			r.Close()
		}
	})

	open := func(b *testing.B) *claimcheck.Store {
		s, err := claimcheck.Open(ctx, claimcheck.Config{Data: b.TempDir(),
			Namespaces: map[string]claimcheck.Policy{"bench": policy}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	roundTrip := func(b *testing.B, c claimcheck.Claims) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			ref, err := c.Put(ctx, "bench", bytes.NewReader(payload), claimcheck.PutOptions{Size: int64(len(payload))})
			if err != nil {
				b.Fatal(err)
			}
			p, err := c.Redeem(ctx, ref)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, p); err != nil || n != int64(len(payload)) {
				b.Fatal(n, err)
			}
			p.Close()
		}
	}
	b.Run("engine", func(b *testing.B) { roundTrip(b, open(b)) })
	b.Run("http", func(b *testing.B) {
		s := open(b)
		srv := httptest.NewServer(server.New(server.Config{Claims: s}))
		defer srv.Close()
		c, err := client.New(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		roundTrip(b, c)
	})
}
