package metatest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
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
	{"DataKeyListAndRewrap", testDataKeyListAndRewrap},
	{"DataKeyRewrapConcurrent", testDataKeyRewrapConcurrent},
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

// namespaceEventKinds returns kind/actor/detail of a namespace's events
// of the given kinds.
func (h *harness) namespaceEventKinds(ns string, kinds ...string) []string {
	h.t.Helper()
	es, err := h.s.NamespaceEvents(h.ctx(), ns, time.Time{}, 0, 100)
	if err != nil {
		h.t.Fatalf("NamespaceEvents(%s): %v", ns, err)
	}
	var out []string
	for _, e := range es {
		if slices.Contains(kinds, e.Kind) {
			out = append(out, e.Kind+"/"+e.Actor+"/"+e.Detail)
		}
	}
	return out
}

// testDataKeyListAndRewrap: LiveDataKeys pages over live keys only, and
// RewrapDataKey is a compare-and-swap on the master key id that never
// touches a destroyed key; both changes are in the audit trail.
func testDataKeyListAndRewrap(t *testing.T, h *harness) {
	ctx := claimcheck.WithActor(h.ctx(), "admin-key")
	var live []meta.DataKey
	for _, ns := range []string{"a", "b", "c"} {
		k, err := h.s.CreateDataKey(ctx, newDataKey(ns, h.now()))
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, k)
	}
	gone, err := h.s.CreateDataKey(ctx, newDataKey("shred", h.now()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.DestroyDataKey(ctx, "shred", h.now()); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "destroy", h.namespaceEventKinds("shred", meta.EventDataKeyDestroyed),
		meta.EventDataKeyDestroyed+"/admin-key/key "+gone.ID)

	// Paging in id order, destroyed keys left out.
	slices.SortFunc(live, func(x, y meta.DataKey) int { return strings.Compare(x.ID, y.ID) })
	var paged []string
	for after := ""; ; {
		page, err := h.s.LiveDataKeys(h.ctx(), "", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range page {
			paged = append(paged, k.ID)
			if k.Destroyed() || len(k.Wrapped) == 0 || k.MasterKeyID != "mk_test" {
				t.Errorf("LiveDataKeys listed %+v", k)
			}
		}
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].ID
	}
	if want := []string{live[0].ID, live[1].ID, live[2].ID}; !slices.Equal(paged, want) {
		t.Fatalf("LiveDataKeys pages: %v, want %v", paged, want)
	}
	if page, err := h.s.LiveDataKeys(h.ctx(), "b", "", 10); err != nil || len(page) != 1 || page[0].Namespace != "b" {
		t.Fatalf("LiveDataKeys(b) = %+v, %v", page, err)
	}
	if page, err := h.s.LiveDataKeys(h.ctx(), "shred", "", 10); err != nil || len(page) != 0 {
		t.Fatalf("LiveDataKeys of a namespace whose key is destroyed = %+v, %v", page, err)
	}

	// The swap, once.
	k := live[0]
	h.clock.Advance(time.Second)
	r := meta.Rewrap{ID: k.ID, From: "mk_test", To: "mk_new", Wrapped: []byte("wrapped by new"), At: h.now()}
	if ok, err := h.s.RewrapDataKey(ctx, r); err != nil || !ok {
		t.Fatalf("RewrapDataKey = %v, %v; want a swap", ok, err)
	}
	got, err := h.s.DataKey(h.ctx(), k.ID)
	if err != nil || got.MasterKeyID != "mk_new" || string(got.Wrapped) != "wrapped by new" || got.Namespace != k.Namespace || !got.CreatedAt.Equal(k.CreatedAt) {
		t.Fatalf("DataKey after the rewrap = %+v, %v", got, err)
	}
	again := r
	again.Wrapped = []byte("a second wrapping")
	if ok, err := h.s.RewrapDataKey(ctx, again); err != nil || ok {
		t.Fatalf("RewrapDataKey from a master key the row no longer has = %v, %v; want no swap", ok, err)
	}
	if got, _ := h.s.DataKey(h.ctx(), k.ID); string(got.Wrapped) != "wrapped by new" {
		t.Fatalf("a failed compare-and-swap changed the row: %+v", got)
	}
	wantEvents(t, "rewrap", h.namespaceEventKinds(k.Namespace, meta.EventDataKeyRewrapped),
		meta.EventDataKeyRewrapped+"/admin-key/key "+k.ID+": master key mk_test -> mk_new")

	// A destroyed key never gets key material back.
	if ok, err := h.s.RewrapDataKey(ctx, meta.Rewrap{ID: gone.ID, From: "mk_test", To: "mk_new", Wrapped: []byte("x"), At: h.now()}); err != nil || ok {
		t.Fatalf("RewrapDataKey of a destroyed key = %v, %v; want no swap", ok, err)
	}
	if got, _ := h.s.DataKey(h.ctx(), gone.ID); !got.Destroyed() || len(got.Wrapped) != 0 || got.MasterKeyID != "mk_test" {
		t.Fatalf("destroyed key after a rewrap attempt: %+v", got)
	}
	if n := len(h.namespaceEventKinds("shred", meta.EventDataKeyRewrapped)); n != 0 {
		t.Fatalf("%d rewrap events for a destroyed key", n)
	}
	if _, err := h.s.RewrapDataKey(ctx, meta.Rewrap{ID: "dk_nope", From: "mk_test", To: "mk_new", Wrapped: []byte("x"), At: h.now()}); !isNotFound(err) {
		t.Fatalf("RewrapDataKey(unknown): %v, want ErrNotFound", err)
	}
}

// testDataKeyRewrapConcurrent: rewraps of one key racing each other (as
// replicas running a rotation at once) swap it exactly once, and the row
// holds the winner's wrapping.
func testDataKeyRewrapConcurrent(t *testing.T, h *harness) {
	k, err := h.s.CreateDataKey(h.ctx(), newDataKey("ns", h.now()))
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	won := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ok, err := h.s.RewrapDataKey(h.ctx(), meta.Rewrap{ID: k.ID, From: "mk_test", To: "mk_new",
				Wrapped: fmt.Appendf(nil, "wrapping %d", i), At: h.now()})
			if err != nil {
				t.Errorf("RewrapDataKey: %v", err)
			}
			won[i] = ok
		})
	}
	wg.Wait()
	winners := 0
	var winner int
	for i, ok := range won {
		if ok {
			winners++
			winner = i
		}
	}
	if winners != 1 {
		t.Fatalf("%d concurrent rewraps swapped, want exactly 1", winners)
	}
	got, err := h.s.DataKey(h.ctx(), k.ID)
	if err != nil || got.MasterKeyID != "mk_new" || string(got.Wrapped) != fmt.Sprintf("wrapping %d", winner) {
		t.Fatalf("DataKey = %+v, %v; want the winner's wrapping", got, err)
	}
	if n := len(h.namespaceEventKinds("ns", meta.EventDataKeyRewrapped)); n != 1 {
		t.Fatalf("%d rewrap events, want 1", n)
	}
}
