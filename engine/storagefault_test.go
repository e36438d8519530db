package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/integrity"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// Tests of the rule that tells a damaged object from an outage (ADR
// 0255) and of dedup's check of the object it shares, on every backend:
// files, memory, a fault-injecting wrapper (an object answering 500, the
// whole service refusing connections) and MinIO with an object whose
// xl.meta was cut.

// fastRetries makes the integrity checks ask again at once.
func fastRetries(t *testing.T) {
	old := integrity.RetryDelays
	integrity.RetryDelays = []time.Duration{time.Millisecond, time.Millisecond}
	t.Cleanup(func() { integrity.RetryDelays = old })
}

// damageBackend is a store and one way to damage an object of it.
type damageBackend struct {
	name string
	// open returns the store for an engine whose data directory is dir,
	// and the damage it does to the object at key.
	open func(t *testing.T, dir string) (blob.Store, func(t *testing.T, key string))
}

func openFileStore(t *testing.T, dir string) blob.Store {
	t.Helper()
	bs := blobtest.Open(t, "file://"+filepath.ToSlash(filepath.Join(dir, "objects")))
	t.Cleanup(func() { bs.Close() })
	return bs
}

var damageBackends = []damageBackend{
	{"file-vanished", func(t *testing.T, dir string) (blob.Store, func(*testing.T, string)) {
		return openFileStore(t, dir), func(t *testing.T, key string) {
			if err := os.Remove(filepath.Join(dir, "objects", filepath.FromSlash(key))); err != nil {
				t.Fatal(err)
			}
		}
	}},
	{"mem-deleted", func(t *testing.T, _ string) (blob.Store, func(*testing.T, string)) {
		bs := blobtest.Open(t, "mem://")
		t.Cleanup(func() { bs.Close() })
		return bs, func(t *testing.T, key string) {
			if err := bs.Delete(t.Context(), key); err != nil {
				t.Fatal(err)
			}
		}
	}},
	{"answers-500", func(t *testing.T, dir string) (blob.Store, func(*testing.T, string)) {
		f := blobtest.NewFaults(openFileStore(t, dir))
		return f, func(_ *testing.T, key string) { f.FailObject(key, http.StatusInternalServerError) }
	}},
	{"minio-xlmeta-cut", func(t *testing.T, _ string) (blob.Store, func(*testing.T, string)) {
		data := testsvc.S3DataDir(t)
		u, _, bucket := testsvc.S3(t)
		bs := blobtest.Open(t, u)
		t.Cleanup(func() { bs.Close() })
		return bs, func(t *testing.T, key string) {
			// What a disk can do to MinIO: its metadata file cut short.
			// MinIO answers 500 InternalError to HEAD and GET from then on.
			if err := os.Truncate(filepath.Join(data, bucket, filepath.FromSlash(key), "xl.meta"), 20); err != nil {
				t.Fatal(err)
			}
		}
	}},
	{"answers-500-postgres", func(t *testing.T, dir string) (blob.Store, func(*testing.T, string)) {
		f := blobtest.NewFaults(openFileStore(t, dir))
		return f, func(_ *testing.T, key string) { f.FailObject(key, http.StatusInternalServerError) }
	}},
	{"minio-deleted", func(t *testing.T, _ string) (blob.Store, func(*testing.T, string)) {
		u, _, _ := testsvc.S3(t)
		bs := blobtest.Open(t, u)
		t.Cleanup(func() { bs.Close() })
		return bs, func(t *testing.T, key string) {
			if err := bs.Delete(t.Context(), key); err != nil {
				t.Fatal(err)
			}
		}
	}},
}

// setupFaults opens a store on files behind a fault-injecting wrapper,
// with the integrity checks asking again at once.
func setupFaults(t *testing.T) (*bundle, *blobtest.Faults) {
	fastRetries(t)
	var f *blobtest.Faults
	b := setup(t, func(c *engine.Config) {
		f = blobtest.NewFaults(openFileStore(t, c.Data))
		c.BlobStore = f
	})
	return b, f
}

// onlyKey returns the key of the one object in bs.
func onlyKey(t *testing.T, bs blob.Store) string {
	t.Helper()
	objs, _, err := bs.List(t.Context(), "", "", 10)
	objs = slices.DeleteFunc(objs, func(o blob.Object) bool { return blob.IsOwnerMarker(o.Key) })
	if err != nil || len(objs) != 1 {
		t.Fatalf("objects = %v, %v; want one", objs, err)
	}
	return objs[0].Key
}

func redeemBytes(ctx context.Context, s *engine.Store, ref claimcheck.Ref) ([]byte, error) {
	p, err := s.Redeem(ctx, ref)
	if err != nil {
		return nil, err
	}
	return p.Bytes()
}

// TestDedupNeverAcknowledgesOntoABadObject: a put of bytes whose blob's
// object vanished, or answers 500, is acknowledged only because it
// stored its own bytes as the repair: the new claim and the old one both
// redeem the payload. Then a redeem of the old claim and a put of the
// same bytes again share the repaired object.
func TestDedupNeverAcknowledgesOntoABadObject(t *testing.T) {
	fastRetries(t)
	for _, be := range damageBackends {
		t.Run(be.name, func(t *testing.T) {
			var bs blob.Store
			var damage func(*testing.T, string)
			b := setup(t, func(c *engine.Config) {
				bs, damage = be.open(t, c.Data)
				c.BlobStore = bs
				if strings.HasSuffix(be.name, "-postgres") {
					c.Metadata, _ = testsvc.Postgres(t)
				}
			})
			ctx := t.Context()
			data := randomBytes(t, 64<<10)
			old := b.put(t, "plain", data)
			damage(t, onlyKey(t, bs))

			ref, err := b.store.Put(ctx, "plain", bytes.NewReader(data), claimcheck.PutOptions{})
			if err != nil {
				t.Fatalf("put of the same bytes over a damaged object: %v", err)
			}
			for _, r := range []claimcheck.Ref{ref, old} {
				got, err := redeemBytes(ctx, b.store, r)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("redeem %s after the put: %d bytes, %v; want the payload", r.ID, len(got), err)
				}
			}
			again, err := b.store.Put(ctx, "plain", bytes.NewReader(data), claimcheck.PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := redeemBytes(ctx, b.store, again); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("redeem of a third put: %d bytes, %v", len(got), err)
			}
		})
	}
}

// TestUnreadableObjectIsDamage: a redeem of an object the storage
// answers with 500 every time while it answers other requests is
// checksum_mismatch and marks the blob damaged (the next redeem answers
// at once); the same answer during an outage (every request refused) is
// unavailable and marks nothing: the claim redeems once storage is back.
func TestUnreadableObjectIsDamage(t *testing.T) {
	b, f := setupFaults(t)
	ctx := t.Context()
	data := randomBytes(t, 10<<10)
	ref := b.put(t, "plain", data)
	key := onlyKey(t, f)

	f.SetDown(true)
	if _, err := redeemBytes(ctx, b.store, ref); !errors.Is(err, claimcheck.ErrUnavailable) {
		t.Fatalf("redeem during an outage: %v; want unavailable", err)
	}
	if _, err := b.store.Put(ctx, "plain", bytes.NewReader(data), claimcheck.PutOptions{}); !errors.Is(err, claimcheck.ErrUnavailable) {
		t.Fatalf("put during an outage: %v; want unavailable", err)
	}
	f.SetDown(false)
	if got, err := redeemBytes(ctx, b.store, ref); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("redeem after the outage: %d bytes, %v; want the payload (an outage is no damage)", len(got), err)
	}

	f.FailObject(key, http.StatusServiceUnavailable)
	if _, err := redeemBytes(ctx, b.store, ref); !errors.Is(err, claimcheck.ErrUnavailable) {
		t.Fatalf("redeem of an object answering 503: %v; want unavailable (throttling is no damage)", err)
	}
	f.FailObject(key, http.StatusInternalServerError)
	if _, err := redeemBytes(ctx, b.store, ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("redeem of an object answering 500: %v; want checksum_mismatch", err)
	}
	f.FailObject(key, 0)
	// Marked: answered from the row, whatever the object says now.
	if _, err := redeemBytes(ctx, b.store, ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("second redeem of the damaged blob: %v; want checksum_mismatch", err)
	}
}

// TestChecksGoOnPastUnreadableObjects: fsck's walk, `fsck --verify`'s
// scrub and the backstop go on past an object answering 500 (damage), one
// answering 503 (not checked) and one deleted (missing), report each of
// them at the end, and mark the damaged ones; the backstop checks the one
// it could not check again at its next run, on its own.
func TestChecksGoOnPastUnreadableObjects(t *testing.T) {
	b, f := setupFaults(t)
	ctx := t.Context()
	var keys []string
	for i := range 4 {
		b.put(t, "plain", randomBytes(t, 1000+i))
		objs, _, err := f.List(ctx, "", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if !slices.Contains(keys, o.Key) && !blob.IsOwnerMarker(o.Key) {
				keys = append(keys, o.Key)
			}
		}
	}
	unreadable, throttled, missing, good := keys[0], keys[1], keys[2], keys[3]
	f.FailObject(unreadable, http.StatusInternalServerError)
	f.FailObject(throttled, http.StatusServiceUnavailable)
	if err := f.Delete(ctx, missing); err != nil {
		t.Fatal(err)
	}

	rep, err := b.store.Sweeper().Inspect(ctx, true)
	if err != nil {
		t.Fatalf("fsck's walk stopped: %v", err)
	}
	if len(rep.Unreadable) != 1 || rep.Unreadable[0].Blob.Key != unreadable ||
		len(rep.Unchecked) != 1 || rep.Unchecked[0].Blob.Key != throttled ||
		len(rep.Missing) != 1 || rep.Missing[0].Key != missing || !rep.Problems() {
		t.Fatalf("fsck report: unreadable %v, unchecked %v, missing %v", rep.Unreadable, rep.Unchecked, rep.Missing)
	}

	if err := b.store.ResetScrub(ctx); err != nil {
		t.Fatal(err)
	}
	sr, err := b.store.Scrub(ctx, 1<<30)
	if err != nil || !sr.PassDone {
		t.Fatalf("fsck --verify stopped: %+v, %v", sr, err)
	}
	if len(sr.Found) != 2 || len(sr.Unchecked) != 1 || sr.Unchecked[0].Blob.Key != throttled {
		t.Fatalf("scrub found %+v, unchecked %+v; want the 500 and the missing object, and the 503 one unchecked", sr.Found, sr.Unchecked)
	}

	res, err := b.store.Sweeper().Backstop().Run(ctx, 0)
	if err != nil || !res.PassDone {
		t.Fatalf("backstop: %+v, %v", res, err)
	}
	if res.Unchecked != 1 {
		t.Fatalf("backstop: %d objects not checked, want 1 (%+v)", res.Unchecked, res.Findings)
	}
	f.FailObject(throttled, 0)
	res, err = b.store.Sweeper().Backstop().Run(ctx, 0)
	if err != nil || res.Unchecked != 0 {
		t.Fatalf("the backstop's next run: %+v, %v; want the object checked again", res, err)
	}
	// The healthy object and the one checked again are no finding.
	for _, fd := range res.Findings {
		if fd.Key == good || fd.Key == throttled {
			t.Errorf("finding about a good object: %+v", fd)
		}
	}
}

// fullDisk is a store whose writes of payloads fail at Close, as on a
// disk that filled up after the store's owner marker was written.
type fullDisk struct{ blob.Store }

func (f fullDisk) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	w, err := f.Store.NewWriter(ctx, key)
	if err != nil || blob.IsOwnerMarker(key) {
		return w, err
	}
	return failingClose{w}, nil
}

type failingClose struct{ io.WriteCloser }

func (f failingClose) Close() error {
	_ = f.WriteCloser.Close()
	return &os.PathError{Op: "write", Path: "object", Err: syscall.ENOSPC}
}

// TestFailedPutGivesBackItsReservation: a put that fails after its
// pending claim was written (the object write fails: a full disk) gives
// its reservation back at once, not at the claim's deadline.
func TestFailedPutGivesBackItsReservation(t *testing.T) {
	b := setup(t, func(c *engine.Config) { c.BlobStore = fullDisk{openFileStore(t, c.Data)} })
	data := randomBytes(t, 300<<10)
	if _, err := b.store.Put(t.Context(), "plain", bytes.NewReader(data), claimcheck.PutOptions{}); err == nil {
		t.Fatal("a put onto a full disk succeeded")
	}
	if u := usage(t, b, "plain"); u.ReservedBytes != 0 || u.PendingClaims != 0 {
		t.Fatalf("usage after the failed put: %+v; want its reservation given back", u)
	}
}
