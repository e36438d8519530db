package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// announcing wraps a blob store and counts the writers that agreed to
// stream an announced payload (blob.KnownPayloadWriter).
type announcing struct {
	blob.Store
	streamed atomic.Int64
}

func (a *announcing) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	w, err := a.Store.NewWriter(ctx, key)
	return &announcingWriter{WriteCloser: w, a: a}, err
}

type announcingWriter struct {
	io.WriteCloser
	a *announcing
}

func (w *announcingWriter) SetKnownPayload(size int64, sum []byte) bool {
	kw, ok := w.WriteCloser.(blob.KnownPayloadWriter)
	if ok && kw.SetKnownPayload(size, sum) {
		w.a.streamed.Add(1)
		return true
	}
	return false
}

// TestPutStreamsAnnouncedPayloads: on S3, a put whose size and digest
// are declared and whose payload is stored as it arrives (random bytes
// under zstd, ADR 0165) streams to the object, and stays all or
// nothing: the right bytes are stored and redeemed, other bytes than
// declared store nothing and commit nothing.
func TestPutStreamsAnnouncedPayloads(t *testing.T) {
	storage, _, _ := testsvc.S3(t)
	ctx := context.Background()
	bs, err := blob.Open(ctx, storage)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	rec := &announcing{Store: bs}
	s, err := Open(ctx, Config{Data: t.TempDir(), BlobStore: rec, Logger: slog.New(slog.DiscardHandler),
		Namespaces: map[string]claimcheck.Policy{"z": {Compression: claimcheck.CompressionZstd}},
		Sweeper:    sweep.Config{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := make([]byte, 1<<20+77)
	rand.Read(data)
	opts := claimcheck.PutOptions{Size: int64(len(data)), Digest: claimcheck.DigestOf(data)}
	ref, err := s.Put(ctx, "z", bytes.NewReader(data), opts)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Compression != "none" || rec.streamed.Load() != 1 {
		t.Fatalf("random bytes under zstd: stored as %s, %d streamed writes; want none, 1", ref.Compression, rec.streamed.Load())
	}
	p, err := s.Redeem(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(p)
	p.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeemed %d bytes of %d: %v", len(got), len(data), err)
	}

	// Bytes of their own (the same digest again would be a dedup hit,
	// answered before the body), one of them altered on the way.
	other := make([]byte, len(data))
	rand.Read(other)
	opts.Digest = claimcheck.DigestOf(other)
	other[len(other)/2] ^= 1
	if _, err := s.Put(ctx, "z", bytes.NewReader(other), opts); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("put of other bytes than declared: %v, want ErrChecksumMismatch", err)
	}
	if rec.streamed.Load() != 2 {
		t.Fatalf("%d streamed writes, want 2", rec.streamed.Load())
	}
	// Only the first put's object is there: the refused one was never
	// completed.
	objs, _, err := bs.List(ctx, "z/", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Size != int64(len(data)) {
		t.Fatalf("objects under z/: %+v, want only the stored one", objs)
	}
}
