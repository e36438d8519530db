package engine

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/sweep"
)

func openTenantStore(t *testing.T, dir string, bTenant string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{
		Data: dir, Clock: clock.NewFake(reapT0), Logger: slog.New(slog.DiscardHandler),
		Tenants: map[string]claimcheck.TenantPolicy{
			"acme": {Quota: claimcheck.Quota{Bytes: 1000, Claims: 50}},
			"beta": {},
		},
		Namespaces: map[string]claimcheck.Policy{
			"a": {Tenant: "acme"},
			"b": {Tenant: bTenant},
		},
		Sweeper: sweep.Config{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTenantQuotaAcrossNamespaces: a tenant's quota holds over all its
// namespaces, for puts and upload inits, concurrent ones included; the
// refusal names the tenant, the limit and the usage; namespace info shows
// the tenant's usage; moving a namespace to another tenant in the config
// moves its usage at the next start.
func TestTenantQuotaAcrossNamespaces(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTenantStore(t, dir, "acme")
	put := func(ns string, n int) error {
		_, err := s.Put(ctx, ns, strings.NewReader(strings.Repeat("x", n)), claimcheck.PutOptions{Size: int64(n)})
		return err
	}
	// 600 bytes over both namespaces, so that each has its row (and the
	// tenant two namespaces) whichever of the concurrent puts below win.
	if err := put("a", 500); err != nil {
		t.Fatal(err)
	}
	if err := put("b", 100); err != nil {
		t.Fatal(err)
	}
	err := put("b", 500)
	if !errors.Is(err, claimcheck.ErrQuotaExceeded) || !strings.Contains(err.Error(), "tenant acme") || !strings.Contains(err.Error(), "used 600") {
		t.Fatalf("put over the tenant quota = %v, want quota exceeded naming tenant acme and its usage", err)
	}
	data := []byte(strings.Repeat("u", 500))
	if _, err := s.InitUpload(ctx, "b", claimcheck.UploadRequest{Size: 500, Digest: claimcheck.DigestOf(data)}); !errors.Is(err, claimcheck.ErrQuotaExceeded) {
		t.Fatalf("upload init over the tenant quota = %v", err)
	}

	// 400 bytes left: 8 concurrent puts of 100 into both namespaces,
	// exactly 4 fit.
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := "a"
			if i%2 == 1 {
				ns = "b"
			}
			switch err := put(ns, 100); {
			case err == nil:
				ok.Add(1)
			case !errors.Is(err, claimcheck.ErrQuotaExceeded):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 4 {
		t.Fatalf("%d of 8 concurrent puts fit into 400 bytes of tenant quota, want 4", ok.Load())
	}
	info, err := s.Namespace(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if info.Tenant == nil || info.Tenant.Name != "acme" || info.Tenant.Usage.UsedBytes != 1000 || info.Tenant.Limits.Bytes != 1000 || info.Tenant.Namespaces != 2 {
		t.Errorf("namespace b's tenant = %+v, want acme with 1000 of 1000 bytes over 2 namespaces", info.Tenant)
	}
	assertNoQuotaDrift(t, s)
	bUsed := info.Usage.UsedBytes
	s.Close()

	// b moves to tenant beta: acme gets b's bytes back at once.
	s = openTenantStore(t, dir, "beta")
	defer s.Close()
	tenants, err := s.Tenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, tn := range tenants {
		got[tn.Name] = tn.Usage.UsedBytes
	}
	if got["acme"] != 1000-bUsed || got["beta"] != bUsed {
		t.Errorf("tenant usage after moving b = %v, want acme %d, beta %d", got, 1000-bUsed, bUsed)
	}
	if err := put("a", int(bUsed)); err != nil {
		t.Errorf("put into the room b left in acme: %v", err)
	}
	assertNoQuotaDrift(t, s)
}
