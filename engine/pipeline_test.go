package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"go.uber.org/goleak"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
)

// failingObjects is the file store whose object writes fail after
// limit bytes, like a full disk.
type failingObjects struct {
	blob.Store
	limit int
}

func (f failingObjects) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	w, err := f.Store.NewWriter(ctx, key)
	return &failingObject{WriteCloser: w, left: f.limit}, err
}

type failingObject struct {
	io.WriteCloser
	left int
}

var errDiskFull = errors.New("no space left on device")

func (w *failingObject) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n, _ := w.WriteCloser.Write(p[:w.left])
		w.left = 0
		return n, errDiskFull
	}
	w.left -= len(p)
	return w.WriteCloser.Write(p)
}

// A put streams through the hashing pipeline (claimcheck.HashCopy, ADR
// 0155). Whatever breaks mid-stream (the body, the object write, the
// caller's context, a digest that does not match), the put fails with
// the right error, leaves no object and no live claim, and no goroutine
// of it outlives the call.
func TestPutPipelineFailures(t *testing.T) {
	payload := randomBytes(t, 1<<20+12345)
	for _, tc := range []struct {
		name string
		put  func(t *testing.T, s *engine.Store) error
		want error
	}{
		{"body fails", func(t *testing.T, s *engine.Store) error {
			body := io.MultiReader(bytes.NewReader(payload[:600<<10]), errReader{io.ErrUnexpectedEOF})
			_, err := s.Put(context.Background(), "plain", body, claimcheck.PutOptions{})
			return err
		}, claimcheck.ErrInvalidArgument},
		{"context cancelled", func(t *testing.T, s *engine.Store) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := &cancelAfter{r: bytes.NewReader(payload), n: 500 << 10, cancel: cancel}
			_, err := s.Put(ctx, "plain", body, claimcheck.PutOptions{})
			return err
		}, context.Canceled},
		{"digest mismatch at the end", func(t *testing.T, s *engine.Store) error {
			other := claimcheck.DigestOf(payload[1:])
			_, err := s.Put(context.Background(), "plain", bytes.NewReader(payload), claimcheck.PutOptions{Digest: other, Size: int64(len(payload))})
			return err
		}, claimcheck.ErrChecksumMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			if err := tc.put(t, b.store); !errors.Is(err, tc.want) {
				t.Fatalf("put: %v, want %v", err, tc.want)
			}
			b.assertNothingStored(t)
			info, err := b.store.Namespace(context.Background(), "plain")
			if err != nil {
				t.Fatal(err)
			}
			if info.Usage.ActiveClaims != 0 || info.Usage.PendingClaims != 0 || info.Usage.ReservedBytes != 0 {
				t.Fatalf("usage after a failed put: %+v, want none", info.Usage)
			}
		})
	}
	t.Run("object write fails", func(t *testing.T) {
		var files blob.Store
		b := setup(t, func(c *engine.Config) {
			var err error
			if files, err = blob.Open(context.Background(), "file://"+c.Data+"/blobs"); err != nil {
				t.Fatal(err)
			}
			c.BlobStore = failingObjects{Store: files, limit: 300 << 10}
		})
		defer files.Close()
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		_, err := b.store.Put(context.Background(), "plain", bytes.NewReader(payload), claimcheck.PutOptions{})
		if !errors.Is(err, claimcheck.ErrUnavailable) {
			t.Fatalf("put onto a failing disk: %v, want ErrUnavailable", err)
		}
		b.assertNothingStored(t)
	})
}
