package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/filestore"
	"github.com/claimcheck/claimcheck/claimstest"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// Resumable uploads (resumable.go) on the real store: SQLite and files,
// and PostgreSQL with MinIO when the services are configured. The clock
// is fake and the sweeper is run by hand.

// rsBundle is one test's store, and on S3 the client to look into the
// bucket with.
type rsBundle struct {
	t      *testing.T
	s      *Store
	clock  *clock.Fake
	s3     *s3.Client
	bucket string
	cloud  bool // a bucket of its own on fake-gcs-server or Azurite
	// claimObjects is how many objects committed claims hold: what
	// assertNothingLeft allows in the bucket.
	claimObjects int
}

// resumableWindow is confirm_within in every namespace of the tests.
const resumableWindow = 10 * time.Minute

// resumableBackends runs fn on SQLite + files and on PostgreSQL + MinIO,
// + fake-gcs-server and + Azurite (appends as multipart uploads, composed
// objects and staged blocks).
func resumableBackends(t *testing.T, fn func(t *testing.T, b *rsBundle)) {
	t.Run("file", func(t *testing.T) { fn(t, setupResumable(t, "")) })
	t.Run("s3", func(t *testing.T) { fn(t, setupResumable(t, "s3")) })
	t.Run("gcs", func(t *testing.T) { fn(t, setupResumable(t, "gcs")) })
	t.Run("azure", func(t *testing.T) { fn(t, setupResumable(t, "azure")) })
}

// setupResumable opens a store on SQLite and files (storage ""), or on
// PostgreSQL and storage "s3", "gcs" or "azure".
func setupResumable(t *testing.T, storage string) *rsBundle {
	t.Helper()
	up := claimcheck.UploadPolicy{ConfirmWithin: claimcheck.Duration(resumableWindow), URLTTL: claimcheck.Duration(time.Minute)}
	cfg := Config{
		Data:      t.TempDir(),
		Clock:     clock.NewFake(upT0),
		MasterKey: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		Namespaces: map[string]claimcheck.Policy{
			"plain":  {Compression: claimcheck.CompressionNone, Uploads: up},
			"zstd":   {Uploads: up},
			"auto":   {Compression: claimcheck.CompressionAuto, Uploads: up},
			"sealed": {Encryption: claimcheck.EncryptionAES256GCM, Uploads: up},
			"quota":  {Compression: claimcheck.CompressionNone, Quota: claimcheck.Quota{Bytes: 8 << 20}, Uploads: up},
			"tiny":   {MaxSize: 1 << 10, Threshold: 1 << 10, Uploads: up},
		},
		Sweeper: sweep.Config{Disabled: true},
		Logger:  slog.New(slog.DiscardHandler),
	}
	b := &rsBundle{t: t, clock: cfg.Clock.(*clock.Fake)}
	switch storage {
	case "s3":
		cfg.Storage, b.s3, b.bucket = testsvc.S3(t)
	case "gcs":
		cfg.Storage, b.cloud = testsvc.GCS(t), true
	case "azure":
		cfg.Storage, b.cloud = testsvc.Azure(t), true
	}
	if storage != "" {
		cfg.Metadata, _ = testsvc.Postgres(t)
	}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.s = s
	t.Cleanup(func() {
		if !t.Failed() {
			assertNoQuotaDrift(t, s)
		}
		s.Close()
	})
	return b
}

func (b *rsBundle) start(ns string, size int, digest string) claimcheck.ResumableUpload {
	b.t.Helper()
	u, err := b.s.StartResumable(b.t.Context(), ns, claimcheck.ResumableRequest{Size: int64(size), Digest: digest, ContentType: "text/plain"})
	if err != nil {
		b.t.Fatalf("StartResumable(%s, %d bytes): %v", ns, size, err)
	}
	return u
}

func (b *rsBundle) append(id string, off int, data []byte) (claimcheck.ResumableUpload, error) {
	return b.s.AppendResumable(b.t.Context(), id, int64(off), bytes.NewReader(data), claimcheck.ChunkChecksum{})
}

func (b *rsBundle) mustAppend(id string, off int, data []byte) claimcheck.ResumableUpload {
	b.t.Helper()
	u, err := b.append(id, off, data)
	if err != nil {
		b.t.Fatalf("AppendResumable(%s at %d, %d bytes): %v", id, off, len(data), err)
	}
	if want := int64(off + len(data)); u.Offset != want {
		b.t.Fatalf("offset after appending %d bytes at %d = %d, want %d", len(data), off, u.Offset, want)
	}
	return u
}

func (b *rsBundle) redeem(ref claimcheck.Ref) []byte {
	b.t.Helper()
	p, err := b.s.Redeem(b.t.Context(), ref)
	if err != nil {
		b.t.Fatalf("Redeem: %v", err)
	}
	defer p.Close()
	data, err := io.ReadAll(p)
	if err != nil {
		b.t.Fatalf("read payload: %v", err)
	}
	return data
}

// reserved is the namespace's reserved and used bytes.
func (b *rsBundle) usage(ns string) (reserved, used int64) {
	b.t.Helper()
	n, err := b.s.meta.Namespace(b.t.Context(), ns)
	if err != nil {
		b.t.Fatal(err)
	}
	return n.ReservedBytes, n.UsedBytes
}

// assertNothingLeft checks that no byte of the uploads is left in the
// storage: no object at their keys and, on S3, no multipart upload in
// the bucket.
func (b *rsBundle) assertNothingLeft(keys ...string) {
	b.t.Helper()
	for _, k := range keys {
		if _, err := b.s.blobs.Attributes(b.t.Context(), k); err == nil {
			b.t.Errorf("object %s is still there", k)
		}
	}
	if b.cloud {
		objs, _, err := b.s.blobs.List(b.t.Context(), "", "", 1000)
		if err != nil {
			b.t.Fatal(err)
		}
		// The store's owner marker is not an upload's (ADR 0255).
		objs = slices.DeleteFunc(objs, func(o blob.Object) bool { return blob.IsOwnerMarker(o.Key) })
		if len(objs) != b.claimObjects {
			b.t.Errorf("%d objects in the bucket (%v), want the %d of committed claims", len(objs), objs, b.claimObjects)
		}
	}
	if b.s3 == nil {
		return
	}
	out, err := b.s3.ListMultipartUploads(b.t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(b.bucket)})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, u := range out.Uploads {
		b.t.Errorf("multipart upload of %s is still there", aws.ToString(u.Key))
	}
	if n := testsvc.CountObjects(b.t, b.s3, b.bucket); n != b.claimObjects {
		b.t.Errorf("%d objects in the bucket, want the %d of committed claims", n, b.claimObjects)
	}
}

func (b *rsBundle) key(id string) string {
	b.t.Helper()
	r, err := b.s.meta.Resumable(b.t.Context(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return r.Key
}

// cutAfter yields n bytes of data, then fails like a broken connection.
type cutAfter struct {
	r io.Reader
	n int
}

var errBroken = errors.New("connection reset")

func (c *cutAfter) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, errBroken
	}
	p = p[:min(len(p), c.n)]
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}

// TestResumableRoundTrip sends a payload in uneven chunks (inside a
// part, across part boundaries, the rest) to namespaces that store it
// as it arrived, compress it and encrypt it, and redeems the same bytes.
func TestResumableRoundTrip(t *testing.T) {
	resumableBackends(t, func(t *testing.T, b *rsBundle) {
		data := claimstest.JSONDoc(11<<20+4321, 3) // compressible
		for _, ns := range []string{"plain", "zstd", "auto", "sealed"} {
			t.Run(ns, func(t *testing.T) {
				u := b.start(ns, len(data), claimcheck.DigestOf(data))
				if u.Offset != 0 || u.State != claimcheck.StatePending || !u.ExpiresAt.Equal(b.clock.Now().Add(resumableWindow)) {
					t.Fatalf("started upload = %+v", u)
				}
				if r, _ := b.usage(ns); r != int64(len(data)) {
					t.Errorf("reserved %d bytes, want %d", r, len(data))
				}
				off := 0
				for _, n := range []int{3 << 20, 4 << 20} {
					sum := sha256.Sum256(data[off : off+n])
					got, err := b.s.AppendResumable(t.Context(), u.ID, int64(off), bytes.NewReader(data[off:off+n]),
						claimcheck.ChunkChecksum{Algorithm: "sha256", Sum: sum[:]})
					if err != nil || got.Offset != int64(off+n) || got.Ref != nil {
						t.Fatalf("append %d at %d = %+v, %v", n, off, got, err)
					}
					off += n
				}
				done := b.mustAppend(u.ID, off, data[off:])
				if done.Ref == nil || done.State != claimcheck.StateActive {
					t.Fatalf("last append = %+v, want the claim", done)
				}
				if got := b.redeem(*done.Ref); !bytes.Equal(got, data) {
					t.Fatalf("redeemed %d bytes, not the %d sent", len(got), len(data))
				}
				if ns == "zstd" && done.Ref.Compression != string(claimcheck.CompressionZstd) {
					t.Errorf("ref compression %q in a zstd namespace", done.Ref.Compression)
				}
				again, err := b.s.ResumableUpload(t.Context(), u.ID)
				if err != nil || again.Ref == nil || *again.Ref != *done.Ref {
					t.Errorf("ResumableUpload after completion = %+v, %v; want the same ref", again, err)
				}
				if r, used := b.usage(ns); r != 0 || used != int64(len(data)) {
					t.Errorf("after completion: reserved %d, used %d; want 0, %d", r, used, len(data))
				}
			})
		}
		// The rewritten namespaces left only their claims' objects.
		if b.s3 != nil {
			out, err := b.s3.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(b.bucket)})
			if err != nil || len(out.Uploads) != 0 {
				t.Errorf("multipart uploads after completion: %d, %v", len(out.Uploads), err)
			}
		}
	})
}

// TestResumableCutAndResume breaks a chunk off mid-way: what arrived is
// kept, the upload says so, and the rest continues from there.
func TestResumableCutAndResume(t *testing.T) {
	resumableBackends(t, func(t *testing.T, b *rsBundle) {
		data := randData(t, 7<<20+99)
		u := b.start("plain", len(data), claimcheck.DigestOf(data))
		cut := 6<<20 + 17 // past the first S3 part
		got, err := b.s.AppendResumable(t.Context(), u.ID, 0, &cutAfter{r: bytes.NewReader(data), n: cut}, claimcheck.ChunkChecksum{})
		if !errors.Is(err, claimcheck.ErrInvalidArgument) || got.Offset != int64(cut) {
			t.Fatalf("cut append = offset %d, %v; want %d and the body's error", got.Offset, err, cut)
		}
		st, err := b.s.ResumableUpload(t.Context(), u.ID)
		if err != nil || st.Offset != int64(cut) {
			t.Fatalf("ResumableUpload = %+v, %v; want offset %d", st, err, cut)
		}
		// From the wrong offset: refused, nothing moves.
		if _, err := b.append(u.ID, 0, data); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Fatalf("append at 0 after %d bytes = %v, want ErrInvalidArgument", cut, err)
		}
		done := b.mustAppend(u.ID, cut, data[cut:])
		if got := b.redeem(*done.Ref); !bytes.Equal(got, data) {
			t.Fatal("the resumed upload redeems other bytes")
		}
	})
}

// TestResumableChunkChecksum refuses a chunk whose checksum does not
// match, keeping the offset where it was.
func TestResumableChunkChecksum(t *testing.T) {
	resumableBackends(t, func(t *testing.T, b *rsBundle) {
		data := randData(t, 6<<20)
		u := b.start("plain", len(data), "")
		b.mustAppend(u.ID, 0, data[:1000])
		wrong := sha256.Sum256([]byte("other bytes"))
		for _, chunk := range [][]byte{data[1000:2000], data[1000 : 5<<20+10]} { // inside a part; past its end
			got, err := b.s.AppendResumable(t.Context(), u.ID, 1000, bytes.NewReader(chunk), claimcheck.ChunkChecksum{Algorithm: "sha256", Sum: wrong[:]})
			if !errors.Is(err, claimcheck.ErrChecksumMismatch) || got.Offset != 1000 {
				t.Fatalf("append of %d bytes with a wrong checksum = offset %d, %v; want 1000, ErrChecksumMismatch", len(chunk), got.Offset, err)
			}
			if st, _ := b.s.ResumableUpload(t.Context(), u.ID); st.Offset != 1000 {
				t.Fatalf("offset after a refused chunk = %d, want 1000", st.Offset)
			}
		}
		if _, err := b.s.AppendResumable(t.Context(), u.ID, 1000, bytes.NewReader(data[1000:]), claimcheck.ChunkChecksum{Algorithm: "md5", Sum: wrong[:16]}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("md5 checksum = %v, want ErrInvalidArgument", err)
		}
		sum := sha256.Sum256(data[1000:])
		done, err := b.s.AppendResumable(t.Context(), u.ID, 1000, bytes.NewReader(data[1000:]), claimcheck.ChunkChecksum{Algorithm: "sha256", Sum: sum[:]})
		if err != nil || done.Ref == nil {
			t.Fatalf("append with the right checksum = %+v, %v", done, err)
		}
		if got := b.redeem(*done.Ref); !bytes.Equal(got, data) {
			t.Fatal("redeemed other bytes")
		}
	})
}

// TestResumableDigestMismatch: a payload whose sha256 is not the one
// declared is refused on its last byte; nothing is stored and the
// reservation is refunded.
func TestResumableDigestMismatch(t *testing.T) {
	resumableBackends(t, func(t *testing.T, b *rsBundle) {
		for _, ns := range []string{"plain", "zstd"} {
			data := randData(t, 5<<20+3)
			u := b.start(ns, len(data), claimcheck.DigestOf([]byte("something else")))
			key := b.key(u.ID)
			b.mustAppend(u.ID, 0, data[:100])
			_, err := b.append(u.ID, 100, data[100:])
			if !errors.Is(err, claimcheck.ErrChecksumMismatch) || !strings.Contains(err.Error(), "sha256") {
				t.Fatalf("%s: completing a mismatched payload = %v, want ErrChecksumMismatch naming sha256", ns, err)
			}
			if _, err := b.s.ResumableUpload(t.Context(), u.ID); !errors.Is(err, claimcheck.ErrGone) {
				t.Errorf("%s: the refused upload = %v, want gone", ns, err)
			}
			if r, used := b.usage(ns); r != 0 || used != 0 {
				t.Errorf("%s: after the refusal: reserved %d, used %d; want nothing", ns, r, used)
			}
			b.assertNothingLeft(key)
		}
	})
}

// TestResumableLimits: max_size and the quota are checked when the
// upload starts, with the put's errors.
func TestResumableLimits(t *testing.T) {
	b := setupResumable(t, "")
	_, err := b.s.StartResumable(t.Context(), "tiny", claimcheck.ResumableRequest{Size: 2 << 10})
	if !errors.Is(err, claimcheck.ErrTooLarge) || !strings.Contains(err.Error(), "max_size") {
		t.Errorf("start past max_size = %v, want ErrTooLarge naming max_size", err)
	}
	b.start("quota", 6<<20, "")
	_, err = b.s.StartResumable(t.Context(), "quota", claimcheck.ResumableRequest{Size: 3 << 20})
	if !errors.Is(err, claimcheck.ErrQuotaExceeded) {
		t.Errorf("start past the quota = %v, want ErrQuotaExceeded", err)
	}
	if r, _ := b.usage("quota"); r != 6<<20 {
		t.Errorf("reserved %d bytes, want the first upload's %d", r, 6<<20)
	}
}

// TestResumableAbort finishes an upload at once: its bytes removed, its
// reservation refunded, further appends gone.
func TestResumableAbort(t *testing.T) {
	resumableBackends(t, func(t *testing.T, b *rsBundle) {
		data := randData(t, 6<<20)
		u := b.start("plain", len(data), "")
		key := b.key(u.ID)
		b.mustAppend(u.ID, 0, data[:5<<20+1])
		if err := b.s.AbortResumable(t.Context(), u.ID); err != nil {
			t.Fatalf("AbortResumable: %v", err)
		}
		if r, _ := b.usage("plain"); r != 0 {
			t.Errorf("reserved %d bytes after abort, want 0", r)
		}
		b.assertNothingLeft(key)
		if err := b.s.AbortResumable(t.Context(), u.ID); err != nil {
			t.Errorf("second AbortResumable = %v, want nil", err)
		}
		if _, err := b.append(u.ID, 5<<20+1, data[5<<20+1:]); !errors.Is(err, claimcheck.ErrGone) {
			t.Errorf("append after abort = %v, want gone", err)
		}
		// The sweeper finds nothing left to do twice.
		b.clock.Advance(time.Hour)
		if _, err := b.s.SweepOnce(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		if r, _ := b.usage("plain"); r != 0 {
			t.Errorf("reserved %d bytes after the sweep, want 0", r)
		}
	})
}

// TestResumableAbandoned leaves uploads at several offsets (nothing,
// inside the first part, after a whole part) and lets confirm_within
// pass: one sweep removes every byte, aborts every multipart upload and
// refunds the reservations exactly.
func TestResumableAbandoned(t *testing.T) {
	resumableBackends(t, func(t *testing.T, b *rsBundle) {
		data := randData(t, 7<<20)
		// A claim beside the uploads: its usage must come out exactly
		// as it went in.
		if _, err := b.s.Put(t.Context(), "plain", bytes.NewReader(data[:12345]), claimcheck.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		b.claimObjects = 1
		reserved0, used0 := b.usage("plain")
		var keys []string
		for _, n := range []int{0, 1 << 20, 5 << 20, 5<<20 + 1} {
			u := b.start("plain", len(data), "")
			keys = append(keys, b.key(u.ID))
			if n > 0 {
				b.mustAppend(u.ID, 0, data[:n])
			}
		}
		if r, _ := b.usage("plain"); r != reserved0+4*int64(len(data)) {
			t.Fatalf("reserved %d, want %d", r, reserved0+4*int64(len(data)))
		}
		b.clock.Advance(resumableWindow + time.Second)
		if _, err := b.s.SweepOnce(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		if r, used := b.usage("plain"); r != reserved0 || used != used0 {
			t.Errorf("after the sweep: reserved %d, used %d; want %d and %d as before the uploads", r, used, reserved0, used0)
		}
		b.assertNothingLeft(keys...)
	})
}

// TestResumableDeadlineFollowsProgress: each append moves the deadline
// to confirm_within from then, so an upload that keeps sending outlives
// its first deadline, and one that stops is reaped on time.
func TestResumableDeadlineFollowsProgress(t *testing.T) {
	b := setupResumable(t, "")
	data := randData(t, 3000)
	u := b.start("plain", len(data), "")
	for i := range 2 {
		b.clock.Advance(resumableWindow * 9 / 10)
		got := b.mustAppend(u.ID, i*1000, data[i*1000:(i+1)*1000])
		if want := b.clock.Now().Add(resumableWindow); !got.ExpiresAt.Equal(want) {
			t.Fatalf("deadline after an append = %v, want %v", got.ExpiresAt, want)
		}
		if _, err := b.s.SweepOnce(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		if st, err := b.s.ResumableUpload(t.Context(), u.ID); err != nil || st.State != claimcheck.StatePending || st.Offset != int64((i+1)*1000) {
			t.Fatalf("upload after %d appends and a sweep = %+v, %v; want pending", i+1, st, err)
		}
	}
	b.clock.Advance(resumableWindow + time.Second)
	if _, err := b.s.SweepOnce(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	_, err := b.s.ResumableUpload(t.Context(), u.ID)
	var gone *claimcheck.GoneError
	if !errors.As(err, &gone) || gone.Reason != claimcheck.ReasonNeverConfirmed {
		t.Errorf("stalled upload after its deadline = %v, want gone (never_confirmed)", err)
	}
}

// TestResumableLost: when the storage drops an upload's bytes on its
// own (on S3, the bucket's rule that aborts old multipart uploads), the
// next append finishes the upload and says to start again, and the
// reservation is refunded.
func TestResumableLost(t *testing.T) {
	resumableBackends(t, func(t *testing.T, b *rsBundle) {
		data := randData(t, 6<<20)
		for _, completing := range []bool{false, true} {
			u := b.start("plain", len(data), "")
			b.mustAppend(u.ID, 0, data[:5<<20])
			r, err := b.s.meta.Resumable(t.Context(), u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := blob.AbilitiesOf(b.s.blobs).Appender.AbortAppend(t.Context(), r.Key, r.Handle); err != nil {
				t.Fatal(err)
			}
			rest := data[5<<20 : 5<<20+10]
			if completing {
				rest = data[5<<20:]
			}
			_, err = b.append(u.ID, 5<<20, rest)
			if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "start the upload again") {
				t.Fatalf("append (completing: %v) after the storage dropped the upload = %v", completing, err)
			}
			if _, err := b.s.ResumableUpload(t.Context(), u.ID); !errors.Is(err, claimcheck.ErrGone) {
				t.Errorf("the lost upload = %v, want gone", err)
			}
			if res, _ := b.usage("plain"); res != 0 {
				t.Errorf("reserved %d after the lost upload, want 0", res)
			}
			b.assertNothingLeft(r.Key)
		}
	})
}

// failingAppends is a file store whose appends get a handle (as an S3
// multipart upload id would be) and whose aborts fail while on, like a
// bucket whose policy forbids AbortMultipartUpload.
type failingAppends struct {
	*filestore.Bucket
	on bool
}

const fakeHandle = "upload-1"

func (f *failingAppends) BeginAppend(ctx context.Context, key string, size int64) (string, error) {
	if _, err := f.Bucket.BeginAppend(ctx, key, size); err != nil {
		return "", err
	}
	return fakeHandle, nil
}

func (f *failingAppends) AbortAppend(ctx context.Context, key, handle string) error {
	if handle != fakeHandle {
		return fmt.Errorf("abort with handle %q, want the one BeginAppend gave", handle)
	}
	if f.on {
		return errors.New("injected: access denied")
	}
	return f.Bucket.AbortAppend(ctx, key, "")
}

// TestResumableReapDeadLetter: an abandoned upload whose abort keeps
// failing is retried by the sweeper and parked as a dead letter, its
// reservation refunded once; retried after the fault is fixed, it is
// aborted with the handle recorded on its row.
func TestResumableReapDeadLetter(t *testing.T) {
	ctx := context.Background()
	files, err := blob.Open(ctx, "file://"+filepath.ToSlash(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	fa := &failingAppends{Bucket: files.(*filestore.Bucket), on: true}
	fc := clock.NewFake(upT0)
	s, err := Open(ctx, Config{
		Data: t.TempDir(), Clock: fc, BlobStore: fa, Logger: slog.New(slog.DiscardHandler),
		Namespaces: map[string]claimcheck.Policy{"plain": {Compression: claimcheck.CompressionNone,
			Uploads: claimcheck.UploadPolicy{ConfirmWithin: claimcheck.Duration(resumableWindow), URLTTL: claimcheck.Duration(time.Minute)}}},
		Sweeper: sweep.Config{Disabled: true, MaxAttempts: 2, RetryDelay: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := s.StartResumable(ctx, "plain", claimcheck.ResumableRequest{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendResumable(ctx, u.ID, 0, strings.NewReader(strings.Repeat("x", 40)), claimcheck.ChunkChecksum{}); err != nil {
		t.Fatal(err)
	}
	r, _ := s.meta.Resumable(ctx, u.ID)

	fc.Advance(resumableWindow + time.Second)
	for attempt := 1; attempt <= 2; attempt++ {
		res, err := s.SweepOnce(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.DeleteFailures != 1 {
			t.Fatalf("sweep %d: %d delete failures, want the abort's 1", attempt, res.DeleteFailures)
		}
		fc.Advance(10 * time.Minute)
	}
	page, err := s.DeadLetters(ctx, claimcheck.DeadLetterQuery{})
	if err != nil || len(page.DeadLetters) != 1 || page.DeadLetters[0].BlobID != r.BlobID {
		t.Fatalf("dead letters = %+v, %v; want the upload's staging blob", page, err)
	}
	if n, _ := s.meta.Namespace(ctx, "plain"); n.ReservedBytes != 0 || n.PendingClaims != 0 {
		t.Errorf("namespace after reaping: %+v, want nothing reserved", n)
	}
	if _, err := s.blobs.Attributes(ctx, r.Key); err != nil {
		t.Errorf("the staging file went although its abort failed: %v", err)
	}

	fa.on = false
	if _, err := s.RetryDeadLetter(ctx, r.BlobID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SweepOnce(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.blobs.Attributes(ctx, r.Key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("staging file after the retried collection: %v, want gone", err)
	}
	if n, _ := s.meta.Namespace(ctx, "plain"); n.ReservedBytes != 0 {
		t.Errorf("reserved %d after the retry, want 0 (refunded once)", n.ReservedBytes)
	}
}

// shortRecords is a file store whose appends record one byte less than
// they stored, as a store that records the end of its last whole part
// before the rest: the running hash then saw more than was recorded.
type shortRecords struct {
	*filestore.Bucket
	short bool
}

func (s *shortRecords) Append(ctx context.Context, key, handle string, size, off int64, r io.Reader, durable func(int64) error) (int64, error) {
	if !s.short {
		return s.Bucket.Append(ctx, key, handle, size, off, r, durable)
	}
	return s.Bucket.Append(ctx, key, handle, size, off, r, func(o int64) error { return durable(o - 1) })
}

// TestResumableHashFallsBack: when the saved hash does not cover the
// bytes recorded, completion reads the object back to check it, and
// still refuses a payload of another sha256.
func TestResumableHashFallsBack(t *testing.T) {
	ctx := context.Background()
	files, err := blob.Open(ctx, "file://"+filepath.ToSlash(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	sr := &shortRecords{Bucket: files.(*filestore.Bucket)}
	s, err := Open(ctx, Config{
		Data: t.TempDir(), Clock: clock.NewFake(upT0), BlobStore: sr, Logger: slog.New(slog.DiscardHandler),
		Namespaces: map[string]claimcheck.Policy{"plain": {Compression: claimcheck.CompressionNone}},
		Sweeper:    sweep.Config{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := randData(t, 10_000)
	for _, digest := range []string{claimcheck.DigestOf(data), claimcheck.DigestOf([]byte("other"))} {
		u, err := s.StartResumable(ctx, "plain", claimcheck.ResumableRequest{Size: int64(len(data)), Digest: digest})
		if err != nil {
			t.Fatal(err)
		}
		sr.short = true
		got, err := s.AppendResumable(ctx, u.ID, 0, bytes.NewReader(data[:4000]), claimcheck.ChunkChecksum{})
		if err != nil || got.Offset != 3999 {
			t.Fatalf("short-recorded append = %+v, %v; want offset 3999", got, err)
		}
		r, _ := s.meta.Resumable(ctx, u.ID)
		if r.HashedTo == r.Received {
			t.Fatalf("the saved hash covers %d bytes, recorded %d: it saw 4000", r.HashedTo, r.Received)
		}
		sr.short = false
		done, err := s.AppendResumable(ctx, u.ID, 3999, bytes.NewReader(data[3999:]), claimcheck.ChunkChecksum{})
		if digest != claimcheck.DigestOf(data) {
			if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
				t.Errorf("completion of another payload than declared = %v, want ErrChecksumMismatch", err)
			}
			continue
		}
		if err != nil || done.Ref == nil || done.Ref.Digest != digest {
			t.Fatalf("completion = %+v, %v", done, err)
		}
		p, err := s.Redeem(ctx, *done.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.Bytes(); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("redeemed %d bytes, %v", len(got), err)
		}
	}
}

// TestResumableNoReadBack: a payload stored as it arrived is checked
// against the running hash; completion reads nothing back.
func TestResumableNoReadBack(t *testing.T) {
	ctx := context.Background()
	files, err := blob.Open(ctx, "file://"+filepath.ToSlash(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	counted, counts := blob.NewCounting(files)
	s, err := Open(ctx, Config{
		Data: t.TempDir(), Clock: clock.NewFake(upT0), BlobStore: counted, Logger: slog.New(slog.DiscardHandler),
		Namespaces: map[string]claimcheck.Policy{"plain": {Compression: claimcheck.CompressionNone}},
		Sweeper:    sweep.Config{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atOpen := counts.Counts().Reads // the owner marker's
	data := randData(t, 100_000)
	u, err := s.StartResumable(ctx, "plain", claimcheck.ResumableRequest{Size: int64(len(data)), Digest: claimcheck.DigestOf(data)})
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 30_000 {
		end := min(off+30_000, len(data))
		if _, err := s.AppendResumable(ctx, u.ID, int64(off), bytes.NewReader(data[off:end]), claimcheck.ChunkChecksum{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := counts.Counts().Reads - atOpen; n != 0 {
		t.Errorf("%d object reads for an upload stored as it arrived, want none", n)
	}
	st, err := s.ResumableUpload(ctx, u.ID)
	if err != nil || st.Ref == nil || st.Ref.Digest != claimcheck.DigestOf(data) {
		t.Fatalf("upload = %+v, %v; want committed with the payload's digest", st, err)
	}
}

// slowBody yields its data in pieces, moving the fake clock by step
// before each and sweeping, like a client on a slow link whose one
// PATCH outlasts confirm_within while the sweeper runs.
type slowBody struct {
	t     *testing.T
	b     *rsBundle
	data  []byte
	piece int
	step  time.Duration
}

func (s *slowBody) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	s.b.clock.Advance(s.step)
	if _, err := s.b.s.SweepOnce(context.Background(), 0); err != nil {
		s.t.Error(err)
	}
	n := copy(p[:min(len(p), s.piece)], s.data)
	s.data = s.data[n:]
	return n, nil
}

// TestResumableLongChunk: a chunk still arriving when its upload's
// deadline would pass keeps the upload alive (the deadline follows the
// bytes within a request too), and completes.
func TestResumableLongChunk(t *testing.T) {
	b := setupResumable(t, "")
	data := randData(t, 64<<10)
	u := b.start("plain", len(data), claimcheck.DigestOf(data))
	body := &slowBody{t: t, b: b, data: data, piece: 8 << 10, step: resumableWindow * 6 / 10}
	done, err := b.s.AppendResumable(t.Context(), u.ID, 0, body, claimcheck.ChunkChecksum{})
	if err != nil || done.Ref == nil {
		t.Fatalf("a chunk lasting %v (confirm_within %v) = %+v, %v; want it completed", 8*body.step, resumableWindow, done, err)
	}
	if got := b.redeem(*done.Ref); !bytes.Equal(got, data) {
		t.Fatal("redeemed other bytes")
	}
}

// TestResumableNeedsAppendingStorage: storage that cannot append
// (memory) refuses to start, saying why, and reserves nothing.
func TestResumableNeedsAppendingStorage(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{Data: t.TempDir(), Storage: "mem://", Clock: clock.NewFake(upT0),
		Logger: slog.New(slog.DiscardHandler), Sweeper: sweep.Config{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.StartResumable(ctx, "plain", claimcheck.ResumableRequest{Size: 10})
	if !errors.Is(err, claimcheck.ErrUnavailable) || !strings.Contains(err.Error(), "cannot append") {
		t.Errorf("StartResumable on memory storage = %v, want ErrUnavailable saying it cannot append", err)
	}
	if n, err := s.meta.Namespace(ctx, "plain"); err == nil && n.ReservedBytes != 0 {
		t.Errorf("reserved %d bytes for a refused upload", n.ReservedBytes)
	}
}
