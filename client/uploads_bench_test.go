package client_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/sweep"
)

// BenchmarkUploadVsPut1MiB compares, side by side in one run, the two ways
// a client stores 1 MiB over HTTP on the embedded defaults (SQLite and
// files): a plain put (one streamed request; the server hashes and
// compresses), and a direct upload (init, PUT to the signed URL, confirm,
// which reads the object back to hash it). Payloads are random, so each
// one is new (no dedup) and zstd finds nothing to save. The client hashes
// the payload in both (client.Put does it for digest-first dedup).
//
//	go test -run '^$' -bench BenchmarkUploadVsPut1MiB -benchtime 200x ./client
func BenchmarkUploadVsPut1MiB(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	store := enginetest.Open(b, engine.Config{
		Data: dir,
		Namespaces: map[string]claimcheck.Policy{
			"zstd": {},
			"raw":  {Compression: claimcheck.CompressionNone},
		},
		Sweeper: sweep.Config{Disabled: true},
		Logger:  slog.New(slog.DiscardHandler),
	})
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	b.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 1<<20)
	rand.Read(data)
	var seq uint64
	next := func() []byte { // a fresh payload: no dedup hits
		seq++
		binary.LittleEndian.PutUint64(data, seq)
		return data
	}
	run := func(name string, op func(p []byte) error) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := op(next()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
	put := func(ns string) func(p []byte) error {
		return func(p []byte) error {
			_, err := c.Put(ctx, ns, bytes.NewReader(p), claimcheck.PutOptions{Size: int64(len(p))})
			return err
		}
	}
	upload := func(p []byte) error {
		u, err := c.InitUpload(ctx, "raw", claimcheck.UploadRequest{Size: int64(len(p)), Digest: claimcheck.DigestOf(p)})
		if err != nil {
			return err
		}
		if err := c.SendUpload(ctx, u, bytes.NewReader(p)); err != nil {
			return err
		}
		_, err = c.ConfirmUpload(ctx, u.ID)
		return err
	}
	// Interleaved rounds, so that a slow moment of the shared machine
	// does not land on one side only.
	for range 2 {
		run("put/zstd", put("zstd"))
		run("put/none", put("raw"))
		run("upload", upload)
	}
}
