package engine

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// Block tables of plain objects (ADR 0257): every write path records
// one, a ranged read checks the blocks it sends, and an object without a
// table is served as before.

// btBundle is a store and a direct connection to its metadata database.
type btBundle struct {
	s  *Store
	db *sql.DB
}

// blockTableBackends runs fn on SQLite + files and on PostgreSQL + MinIO.
func blockTableBackends(t *testing.T, fn func(t *testing.T, b btBundle)) {
	open := func(t *testing.T, remote bool) btBundle {
		cfg := Config{
			Data:  t.TempDir(),
			Clock: clock.NewFake(upT0),
			Namespaces: map[string]claimcheck.Policy{
				"plain": {Compression: claimcheck.CompressionNone},
				"auto":  {Compression: claimcheck.CompressionAuto},
			},
			Sweeper: sweep.Config{Disabled: true},
			Logger:  slog.New(slog.DiscardHandler),
		}
		var db *sql.DB
		if remote {
			cfg.Metadata, db = testsvc.Postgres(t)
			cfg.Storage, _, _ = testsvc.S3(t)
		} else {
			var err error
			if db, err = sql.Open("sqlite", filepath.Join(cfg.Data, "claimcheck.db")); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
		}
		s, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return btBundle{s: s, db: db}
	}
	t.Run("sqlite-file", func(t *testing.T) { fn(t, open(t, false)) })
	t.Run("postgres-minio", func(t *testing.T) { fn(t, open(t, true)) })
}

// objectKey is the key of the object behind ref.
func (b btBundle) objectKey(t *testing.T, ref claimcheck.Ref) string {
	t.Helper()
	c, err := b.s.meta.Claim(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	bl, err := b.s.meta.Blob(t.Context(), c.BlobID)
	if err != nil {
		t.Fatal(err)
	}
	return bl.Key
}

// wantTable fails unless the object behind ref has the block table of data.
func (b btBundle) wantTable(t *testing.T, ref claimcheck.Ref, data []byte) {
	t.Helper()
	key := b.objectKey(t, ref)
	got, ok, err := b.s.meta.BlockTable(t.Context(), key)
	if err != nil || !ok {
		t.Fatalf("block table of %s: ok %v, %v", key, ok, err)
	}
	bt := storedform.NewBlockTable()
	_, _ = bt.Write(data)
	if !bytes.Equal(got, bt.Encoded()) {
		t.Fatalf("block table of %s is not that of the payload", key)
	}
}

// alter rewrites the object behind ref with the byte at off flipped: the
// storage hands out a wrong byte, with the right length.
func (b btBundle) alter(t *testing.T, ref claimcheck.Ref, off int64) {
	t.Helper()
	ctx := t.Context()
	key := b.objectKey(t, ref)
	r, err := b.s.blobs.NewReader(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil {
		t.Fatal(err)
	}
	raw[off] ^= 0x20
	w, err := b.s.blobs.NewWriter(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func (b btBundle) put(t *testing.T, ns string, data []byte) claimcheck.Ref {
	t.Helper()
	ref, err := b.s.Put(t.Context(), ns, bytes.NewReader(data), claimcheck.PutOptions{})
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	return ref
}

func (b btBundle) rangeOf(t *testing.T, ref claimcheck.Ref, off, n int64) ([]byte, error) {
	t.Helper()
	p, err := b.s.RedeemRange(t.Context(), ref, off, n)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return io.ReadAll(p)
}

// Ranges at and across block boundaries return exactly the bytes put; a
// flipped byte inside a range fails it before any byte of its block is
// sent, and marks the blob damaged.
func TestRedeemRangePlainBlocks(t *testing.T) {
	blockTableBackends(t, func(t *testing.T, b btBundle) {
		const bs = storedform.BlockSize
		data := randData(t, 5*bs+777)
		ref := b.put(t, "plain", data)
		b.wantTable(t, ref, data)
		for _, r := range [][2]int64{{0, 1}, {bs - 1, 2}, {bs, bs}, {bs + 5, 3 * bs}, {0, int64(len(data))}, {int64(len(data)) - 1, 1}, {2*bs - 10, 20}} {
			got, err := b.rangeOf(t, ref, r[0], r[1])
			if err != nil || !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
				t.Fatalf("range %v: %d bytes, %v", r, len(got), err)
			}
		}
		b.alter(t, ref, 3*bs+100)
		// A range of intact blocks is served.
		if got, err := b.rangeOf(t, ref, 0, 2*bs); err != nil || !bytes.Equal(got, data[:2*bs]) {
			t.Fatalf("range of intact blocks: %v", err)
		}
		got, err := b.rangeOf(t, ref, 3*bs+50, 1000)
		if !errors.Is(err, claimcheck.ErrChecksumMismatch) || len(got) != 0 {
			t.Fatalf("range over the flipped byte: %d bytes, %v; want none and ErrChecksumMismatch", len(got), err)
		}
		// Marked damaged: every read fails at once now.
		if _, err := b.rangeOf(t, ref, 0, 10); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("after the damage was found: %v", err)
		}
	})
}

// An object written before block tables (no table recorded) still
// serves ranges, checked by their count only; one of at most one block
// is read whole and verified.
func TestRedeemRangePlainWithoutTable(t *testing.T) {
	blockTableBackends(t, func(t *testing.T, b btBundle) {
		data := randData(t, 3*storedform.BlockSize+1)
		ref := b.put(t, "plain", data)
		if _, err := b.db.ExecContext(t.Context(), `DELETE FROM object_blocks`); err != nil {
			t.Fatal(err)
		}
		if got, err := b.rangeOf(t, ref, 70_000, 100_000); err != nil || !bytes.Equal(got, data[70_000:170_000]) {
			t.Fatalf("range of an object without a table: %v", err)
		}
		small := randData(t, 1000)
		sref := b.put(t, "plain", small)
		b.alter(t, sref, 900)
		if _, err := b.rangeOf(t, sref, 0, 10); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("range of an altered one-block object: %v, want ErrChecksumMismatch", err)
		}
	})
}

// Every write path records the table of a new plain object: put, the
// completion of a resumable upload (stored as it arrived, and rewritten
// by "auto" that kept it plain), and the repair of a damaged blob by a
// put of the same bytes.
func TestBlockTableOnEveryWritePath(t *testing.T) {
	blockTableBackends(t, func(t *testing.T, b btBundle) {
		ctx := t.Context()
		data := randData(t, 4*storedform.BlockSize+5)
		b.wantTable(t, b.put(t, "plain", data), data)

		for _, ns := range []string{"plain", "auto"} {
			other := randData(t, 3*storedform.BlockSize+9)
			u, err := b.s.StartResumable(ctx, ns, claimcheck.ResumableRequest{Size: int64(len(other))})
			if err != nil {
				t.Fatal(err)
			}
			done, err := b.s.AppendResumable(ctx, u.ID, 0, bytes.NewReader(other), claimcheck.ChunkChecksum{})
			if err != nil || done.Ref == nil {
				t.Fatalf("resumable upload in %s: %+v, %v", ns, done, err)
			}
			if done.Ref.Compression != "none" {
				t.Fatalf("resumable upload in %s stored as %s", ns, done.Ref.Compression)
			}
			b.wantTable(t, *done.Ref, other)
		}

		// Repair: the blob of these bytes is damaged; a new put of them
		// replaces its object, and the new object has its table.
		rep := randData(t, 2*storedform.BlockSize+3)
		ref := b.put(t, "plain", rep)
		b.alter(t, ref, 10)
		if _, err := b.rangeOf(t, ref, 0, 100); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("range of the altered object: %v", err)
		}
		again := b.put(t, "plain", rep)
		b.wantTable(t, again, rep)
		if got, err := b.rangeOf(t, again, 0, int64(len(rep))); err != nil || !bytes.Equal(got, rep) {
			t.Fatalf("range after the repair: %v", err)
		}
	})
}

// The confirm of a direct upload computes the table while it reads the
// uploaded object back.
func TestBlockTableOnConfirm(t *testing.T) {
	uploadBackends(t, func(t *testing.T, b *upBundle) {
		data := randData(t, 3*storedform.BlockSize+11)
		u := b.mustInit("up", data)
		b.mustSend(u, data)
		ref, err := b.s.ConfirmUpload(t.Context(), u.ID)
		if err != nil {
			t.Fatal(err)
		}
		btBundle{s: b.s}.wantTable(t, ref, data)
		p, err := b.s.RedeemRange(t.Context(), ref, 100_000, 50_000)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if got, err := io.ReadAll(p); err != nil || !bytes.Equal(got, data[100_000:150_000]) {
			t.Fatalf("range after confirm: %v", err)
		}
	})
}
