package metatest

import (
	"errors"
	"strings"
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
		if err := h.s.CreateKey(ctx, k, 0); err != nil {
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
	if err := h.s.CreateKey(ctx, a, 0); !errors.Is(err, meta.ErrConflict) {
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

// testKeyLimitAndPages: a tenant's keys not revoked are held to the
// limit in the create's transaction (a revoked one makes room), and
// pages follow creation order, revoked keys included (ADR 0270).
func testKeyLimitAndPages(t *testing.T, h *harness) {
	ctx := h.ctx()
	mk := func(id, tenant string, limit int) error {
		k := meta.APIKey{ID: id, Tenant: tenant, Role: "admin", Hash: "hash-" + id, CreatedAt: h.now()}
		if id == "l3" {
			k.CreatedAt = h.now().Add(-time.Second) // the same time as l2: the id orders them
		}
		return h.s.CreateKey(ctx, k, limit)
	}
	for _, id := range []string{"l1", "l2", "l3"} {
		if err := mk(id, "lim", 3); err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(time.Second)
	}
	if err := mk("l4", "lim", 3); !errors.Is(err, meta.ErrLimitReached) {
		t.Fatalf("the 4th key: %v, want ErrLimitReached", err)
	}
	if err := mk("o1", "other", 3); err != nil {
		t.Fatalf("another tenant's key: %v", err)
	}
	if _, err := h.s.RevokeKey(ctx, "l1", "lim", h.now()); err != nil {
		t.Fatal(err)
	}
	if err := mk("l4", "lim", 3); err != nil {
		t.Fatalf("after a revoke: %v", err)
	}
	var got []string
	var at time.Time
	after := ""
	for {
		page, err := h.s.KeyPage(ctx, "lim", at, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, k := range page {
			got = append(got, k.ID)
		}
		at, after = page[len(page)-1].CreatedAt, page[len(page)-1].ID
	}
	if want := "l1 l2 l3 l4"; strings.Join(got, " ") != want {
		t.Errorf("pages: %v, want %s", got, want)
	}
}
