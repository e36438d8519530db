package auth_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

func setup(t *testing.T) (*auth.Service, meta.Store, *clock.Fake) {
	t.Helper()
	m, err := sqlmeta.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	clk := clock.NewFake(time.Date(2026, 1, 9, 13, 0, 0, 0, time.UTC))
	return auth.New(m, clk), m, clk
}

func TestCreateAuthenticateRevoke(t *testing.T) {
	s, m, _ := setup(t)
	ctx := t.Context()
	k, token, err := s.Create(ctx, auth.CreateParams{Tenant: "acme", Role: auth.RoleProducer, Namespace: "orders", Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, auth.TokenPrefix+k.ID+"_") {
		t.Fatalf("token %q does not start with the prefix and key id %s", token, k.ID)
	}
	// Only a hash is stored.
	row, err := m.Key(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, _ := auth.ParseToken(token)
	if strings.Contains(row.Hash, secret) || len(row.Hash) != 64 {
		t.Fatalf("stored hash %q must be a sha256 hex, not the secret", row.Hash)
	}
	got, err := s.Authenticate(ctx, token, "")
	if err != nil || got.ID != k.ID || got.Tenant != "acme" || got.Role != auth.RoleProducer || got.Namespace != "orders" {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "Bearer x", tamper(token), auth.TokenPrefix + strings.Repeat("a", 16) + "_" + secret, token + "x"} {
		if _, err := s.Authenticate(ctx, bad, ""); !errors.Is(err, claimcheck.ErrUnauthenticated) {
			t.Errorf("Authenticate(%q) = %v, want ErrUnauthenticated", bad, err)
		}
	}
	if _, err := s.Revoke(ctx, k.ID, "other"); !errors.Is(err, claimcheck.ErrNotFound) {
		t.Fatalf("revoke by another tenant = %v, want ErrNotFound", err)
	}
	if _, err := s.Revoke(ctx, k.ID, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, token, ""); !errors.Is(err, claimcheck.ErrUnauthenticated) {
		t.Fatalf("a revoked key must fail at once, got %v", err)
	}
	ks, err := s.List(ctx, "acme")
	if err != nil || len(ks) != 1 || ks[0].RevokedAt.IsZero() {
		t.Fatalf("List = %+v, %v; want the one revoked key", ks, err)
	}
}

func TestCreateValidates(t *testing.T) {
	s, _, _ := setup(t)
	for _, p := range []auth.CreateParams{
		{Tenant: "", Role: auth.RoleAdmin},
		{Tenant: "Acme", Role: auth.RoleAdmin},
		{Tenant: "acme", Role: "root"},
		{Tenant: "acme", Role: auth.RoleAdmin, Namespace: "a/b"},
		{Tenant: "acme", Role: auth.RoleAdmin, Name: "bad\nname"},
	} {
		if _, _, err := s.Create(t.Context(), p); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Errorf("Create(%+v) = %v, want ErrInvalidArgument", p, err)
		}
	}
}

func TestRoles(t *testing.T) {
	want := map[auth.Role]string{
		auth.RoleProducer: "put stat release delete namespace list extend",
		auth.RoleConsumer: "redeem stat release namespace",
		auth.RoleAdmin:    "put redeem stat release delete namespace list extend keys admin",
	}
	all := []auth.Op{auth.OpPut, auth.OpRedeem, auth.OpStat, auth.OpRelease, auth.OpDelete, auth.OpNamespace, auth.OpList, auth.OpExtend, auth.OpKeys, auth.OpAdmin}
	for role, ops := range want {
		allowed := strings.Fields(ops)
		for _, op := range all {
			in := false
			for _, a := range allowed {
				in = in || a == string(op)
			}
			if role.Allows(op) != in {
				t.Errorf("%s.Allows(%s) = %v, want %v", role, op, role.Allows(op), in)
			}
		}
	}
}

// TestFailureEventsSampled: a flood of bad tokens writes a bounded number
// of auth_failed events, never the secret, and the count of the ones left
// out reaches the log with the next recorded event.
func TestFailureEventsSampled(t *testing.T) {
	s, m, clk := setup(t)
	ctx := context.Background()
	k, token, err := s.Create(ctx, auth.CreateParams{Tenant: "acme", Role: auth.RoleConsumer})
	if err != nil {
		t.Fatal(err)
	}
	_, secret, _ := auth.ParseToken(token)
	wrong := tamper(token)
	for range 1000 {
		_, _ = s.Authenticate(ctx, wrong, "127.0.0.1:5555")
	}
	clk.Advance(time.Second)
	_, _ = s.Authenticate(ctx, "garbage", "")
	evs, err := m.Events(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var last meta.Event
	for _, e := range evs {
		if e.Kind != auth.EventAuthFailed {
			continue
		}
		n++
		last = e
		if strings.Contains(e.Detail, secret) || strings.Contains(e.Detail, secret[:20]) {
			t.Fatalf("event %q holds the secret", e.Detail)
		}
		if n == 1 && (!strings.Contains(e.Detail, "key "+k.ID) || e.Actor != k.ID) {
			t.Fatalf("event %+v does not name the key id", e)
		}
	}
	if n != 21 {
		t.Fatalf("%d auth_failed events after 1001 failures, want 20 (burst) + 1 (a second later)", n)
	}
	if !strings.Contains(last.Detail, "980 earlier failures not recorded") {
		t.Fatalf("last event %q does not report the 980 sampled-out failures", last.Detail)
	}
}

// TestKeyEvents: creating and revoking keys are in the tenant's audit
// trail with the acting key, never the secret or its hash; a failed
// authentication with an existing key is filed under that key's tenant,
// one with an unknown key under none.
func TestKeyEvents(t *testing.T) {
	s, m, clk := setup(t)
	boot := claimcheck.WithActor(t.Context(), "cli:ops")
	k, token, err := s.Create(boot, auth.CreateParams{Tenant: "acme", Role: auth.RoleProducer, Namespace: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	admin, _, err := s.Create(boot, auth.CreateParams{Tenant: "acme", Role: auth.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	for range 2 { // the second revoke changes nothing and logs nothing
		if _, err := s.Revoke(claimcheck.WithActor(t.Context(), admin.ID), k.ID, "acme"); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = s.Authenticate(t.Context(), token, "10.0.0.1:4242") // revoked
	_, _ = s.Authenticate(t.Context(), auth.TokenPrefix+strings.Repeat("a", 16)+"_"+strings.Repeat("b", 43), "")

	es, err := m.TenantEvents(t.Context(), "acme", time.Time{}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	row, err := m.Key(t.Context(), k.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, _ := auth.ParseToken(token)
	var got []string
	for _, e := range es {
		if strings.Contains(e.Detail, secret) || strings.Contains(e.Detail, row.Hash) {
			t.Fatalf("event %+v holds the secret or its hash", e)
		}
		got = append(got, e.Kind+"/"+e.Actor+"/"+e.Namespace+"/"+e.Detail)
	}
	want := []string{
		"key_created/cli:ops/orders/key " + k.ID + "; tenant acme; role producer",
		"key_created/cli:ops//key " + admin.ID + "; tenant acme; role admin",
		"key_revoked/" + admin.ID + "/orders/key " + k.ID + "; tenant acme; role producer",
		"auth_failed/" + k.ID + "//revoked key; key " + k.ID + "; from 10.0.0.1:4242",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events of tenant acme:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The unknown key's failure belongs to no tenant.
	all, err := m.Events(t.Context(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if last := all[len(all)-1]; last.Kind != auth.EventAuthFailed || last.Tenant != "" || last.Actor != strings.Repeat("a", 16) {
		t.Fatalf("failure with an unknown key = %+v, want no tenant", last)
	}
}

// tamper changes the last character of a token (to another valid one).
func tamper(token string) string {
	last := "A"
	if strings.HasSuffix(token, "A") {
		last = "B"
	}
	return token[:len(token)-1] + last
}
