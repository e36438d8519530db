package metatest

import (
	"errors"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// testKeys checks the API key rows: round trip, listing by tenant,
// duplicate ids, and revoke semantics (tenant-bound, idempotent, visible
// at once to the next lookup).
func testKeys(t *testing.T, h *harness) {
	ctx := h.ctx()
	mk := func(id, tenant, role, ns string) meta.APIKey {
		k := meta.APIKey{ID: id, Tenant: tenant, Role: role, Namespace: ns, Name: "n-" + id,
			Hash: "hash-" + id, CreatedAt: h.now()}
		if err := h.s.CreateKey(ctx, k); err != nil {
			t.Fatalf("CreateKey(%s): %v", id, err)
		}
		h.clock.Advance(time.Second)
		return k
	}
	a := mk("a1", "acme", "admin", "")
	mk("a2", "acme", "producer", "orders")
	mk("b1", "beta", "consumer", "")

	got, err := h.s.Key(ctx, "a2")
	if err != nil {
		t.Fatal(err)
	}
	want := meta.APIKey{ID: "a2", Tenant: "acme", Role: "producer", Namespace: "orders", Name: "n-a2",
		Hash: "hash-a2", CreatedAt: epoch.Add(time.Second)}
	if !got.CreatedAt.Equal(want.CreatedAt) || got.ID != want.ID || got.Tenant != want.Tenant || got.Role != want.Role ||
		got.Namespace != want.Namespace || got.Name != want.Name || got.Hash != want.Hash || got.Revoked() {
		t.Fatalf("Key = %+v, want %+v", got, want)
	}
	if _, err := h.s.Key(ctx, "nope"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("Key(absent) = %v, want ErrNotFound", err)
	}
	if err := h.s.CreateKey(ctx, a); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("CreateKey(duplicate id) = %v, want ErrConflict", err)
	}

	ids := func(tenant string) []string {
		t.Helper()
		ks, err := h.s.Keys(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}
	if got := ids("acme"); len(got) != 2 || got[0] != "a1" || got[1] != "a2" {
		t.Fatalf("Keys(acme) = %v, want [a1 a2] in creation order", got)
	}
	if got := ids(""); len(got) != 3 {
		t.Fatalf("Keys(all) = %v, want 3 keys", got)
	}

	// Another tenant cannot revoke (or learn of) the key.
	if _, err := h.s.RevokeKey(ctx, "a2", "beta", h.now()); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("RevokeKey by another tenant = %v, want ErrNotFound", err)
	}
	revokedAt := h.now()
	k, err := h.s.RevokeKey(ctx, "a2", "acme", revokedAt)
	if err != nil || !k.RevokedAt.Equal(revokedAt) {
		t.Fatalf("RevokeKey = %+v, %v; want revoked at %v", k, err, revokedAt)
	}
	if k, err := h.s.Key(ctx, "a2"); err != nil || !k.Revoked() {
		t.Fatalf("Key after revoke = %+v, %v; want revoked", k, err)
	}
	// Idempotent: the first revocation time stays.
	h.clock.Advance(time.Hour)
	if k, err := h.s.RevokeKey(ctx, "a2", "", h.now()); err != nil || !k.RevokedAt.Equal(revokedAt) {
		t.Fatalf("second RevokeKey = %+v, %v; want the first revocation time kept", k, err)
	}
	if _, err := h.s.RevokeKey(ctx, "nope", "", h.now()); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("RevokeKey(absent) = %v, want ErrNotFound", err)
	}
	if k, err := h.s.Key(ctx, "a1"); err != nil || k.Revoked() {
		t.Fatalf("other keys are untouched: %+v, %v", k, err)
	}
}
