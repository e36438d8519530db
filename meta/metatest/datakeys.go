package metatest

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Data keys of encrypted namespaces (meta.DataKeyStore).

var dataKeyTests = []struct {
	name string
	fn   func(t *testing.T, h *harness)
}{
	{"DataKeyLifecycle", testDataKeyLifecycle},
	{"DataKeyCreateConcurrent", testDataKeyCreateConcurrent},
	{"DataKeyDestroyRefusedUnderHold", testDataKeyDestroyRefusedUnderHold},
	{"DataKeyEndsDedupOfOlderBlobs", testDataKeyEndsDedupOfOlderBlobs},
}

func newDataKey(ns string, at time.Time) meta.DataKey {
	return meta.DataKey{ID: newID("dk_"), Namespace: ns, MasterKeyID: "mk_test", Wrapped: []byte(newID("wrapped")), CreatedAt: at}
}

func testDataKeyLifecycle(t *testing.T, h *harness) {
	ctx := h.ctx()
	if _, err := h.s.LiveDataKey(ctx, "ns"); !isNotFound(err) {
		t.Fatalf("LiveDataKey before any: %v, want ErrNotFound", err)
	}
	k := newDataKey("ns", h.now())
	got, err := h.s.CreateDataKey(ctx, k)
	if err != nil || got.ID != k.ID || !bytes.Equal(got.Wrapped, k.Wrapped) || got.MasterKeyID != "mk_test" {
		t.Fatalf("CreateDataKey = %+v, %v", got, err)
	}
	wantTime(t, "CreatedAt", got.CreatedAt, epoch)
	// A second key for the same namespace loses to the live one.
	if got, err := h.s.CreateDataKey(ctx, newDataKey("ns", h.now())); err != nil || got.ID != k.ID {
		t.Fatalf("second CreateDataKey = %+v, %v; want the live key", got, err)
	}
	// Other namespaces have their own.
	other, err := h.s.CreateDataKey(ctx, newDataKey("other", h.now()))
	if err != nil || other.ID == k.ID {
		t.Fatalf("CreateDataKey(other) = %+v, %v", other, err)
	}

	h.clock.Advance(time.Minute)
	d, err := h.s.DestroyDataKey(ctx, "ns", h.now())
	if err != nil || d.ID != k.ID || !d.Destroyed() || d.Wrapped != nil {
		t.Fatalf("DestroyDataKey = %+v, %v", d, err)
	}
	stored, err := h.s.DataKey(ctx, k.ID)
	if err != nil || !stored.Destroyed() || len(stored.Wrapped) != 0 || stored.Namespace != "ns" {
		t.Fatalf("DataKey after destroy = %+v, %v; want a tombstone without key material", stored, err)
	}
	wantTime(t, "DestroyedAt", stored.DestroyedAt, epoch.Add(time.Minute))
	if _, err := h.s.LiveDataKey(ctx, "ns"); !isNotFound(err) {
		t.Fatalf("LiveDataKey after destroy: %v, want ErrNotFound", err)
	}
	if _, err := h.s.DestroyDataKey(ctx, "ns", h.now()); !isNotFound(err) {
		t.Fatalf("second DestroyDataKey: %v, want ErrNotFound", err)
	}
	if live, err := h.s.LiveDataKey(ctx, "other"); err != nil || live.ID != other.ID {
		t.Fatalf("the other namespace's key = %+v, %v", live, err)
	}
	// A new key can be made after a shred.
	k2 := newDataKey("ns", h.now())
	if got, err := h.s.CreateDataKey(ctx, k2); err != nil || got.ID != k2.ID {
		t.Fatalf("CreateDataKey after destroy = %+v, %v", got, err)
	}
	if _, err := h.s.DataKey(ctx, "dk_nope"); !isNotFound(err) {
		t.Fatalf("DataKey(unknown): %v", err)
	}
}

func testDataKeyCreateConcurrent(t *testing.T, h *harness) {
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, err := h.s.CreateDataKey(h.ctx(), newDataKey("ns", h.now()))
			if err != nil {
				t.Errorf("CreateDataKey: %v", err)
				return
			}
			ids[i] = k.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent creators got different live keys: %v", ids)
		}
	}
}

func testDataKeyDestroyRefusedUnderHold(t *testing.T, h *harness) {
	ctx := h.ctx()
	if _, err := h.s.CreateDataKey(ctx, newDataKey("ns", h.now())); err != nil {
		t.Fatal(err)
	}
	res := h.put(put{})
	if err := h.s.SetClaimHold(ctx, res.Claim.ID, "case", h.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.DestroyDataKey(ctx, "ns", h.now()); !isHeld(err) {
		t.Fatalf("DestroyDataKey with a held claim: %v, want ErrHeld", err)
	}
	if _, _, err := h.s.ClearClaimHold(ctx, res.Claim.ID, h.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.SetNamespaceHold(ctx, "ns", "audit", h.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.DestroyDataKey(ctx, "ns", h.now()); !isHeld(err) {
		t.Fatalf("DestroyDataKey of a held namespace: %v, want ErrHeld", err)
	}
	if _, err := h.s.LiveDataKey(ctx, "ns"); err != nil {
		t.Fatalf("a refused destroy must keep the key: %v", err)
	}
	if _, err := h.s.ClearNamespaceHold(ctx, "ns", h.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.DestroyDataKey(ctx, "ns", h.now()); err != nil {
		t.Fatalf("DestroyDataKey after the holds are lifted: %v", err)
	}
}

func isNotFound(err error) bool { return err != nil && errors.Is(err, meta.ErrNotFound) }
func isHeld(err error) bool     { return err != nil && errors.Is(err, meta.ErrHeld) }

// testDataKeyEndsDedupOfOlderBlobs: blobs written before a namespace's key
// became live (in clear), and blobs under a destroyed key, are never
// shared by later commits.
func testDataKeyEndsDedupOfOlderBlobs(t *testing.T, h *harness) {
	ctx := h.ctx()
	plain := put{Digest: digestOf("plain"), Dedup: true}
	h.put(plain)
	other := h.put(put{NS: "other", Digest: digestOf("plain"), Dedup: true})
	k, err := h.s.CreateDataKey(ctx, newDataKey("ns", h.now()))
	if err != nil {
		t.Fatal(err)
	}
	if res := h.put(plain); res.DedupHit {
		t.Fatal("a commit after the key was made shared a blob written in clear")
	}
	// Another namespace keeps its dedup.
	if res := h.put(put{NS: "other", Digest: digestOf("plain"), Dedup: true}); !res.DedupHit || res.Blob.ID != other.Blob.ID {
		t.Fatal("making a key ended dedup in another namespace")
	}
	// A blob under the key: shared while the key lives, not once destroyed.
	sealed := put{Digest: digestOf("sealed"), Dedup: true}.withDefaults()
	cp := h.pendingParams(sealed)
	cp.Blob.Key += "." + k.ID
	if err := h.s.CreatePending(ctx, cp); err != nil {
		t.Fatal(err)
	}
	h.track(cp.Claim.ID, cp.Blob.ID)
	h.commit(cp, sealed)
	if res := h.put(sealed); !res.DedupHit || res.Blob.ID != cp.Blob.ID {
		t.Fatal("a blob under the live key was not shared")
	}
	if _, err := h.s.DestroyDataKey(ctx, "ns", h.now()); err != nil {
		t.Fatal(err)
	}
	if res := h.put(sealed); res.DedupHit {
		t.Fatal("a commit shared a blob whose data key is destroyed")
	}
}
