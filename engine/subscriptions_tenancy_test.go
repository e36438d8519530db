package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

func loopbackSubscriptions(targets ...dispatch.Target) dispatch.Config {
	return dispatch.Config{TargetPolicy: dispatch.TargetPolicy{AllowLoopback: true}, Disabled: true, Targets: targets}
}

// TestSubscriptionIDsPerTenant: a tenant choosing an id another tenant
// has gets it (ADR 0269); before, the answer was `id: "b-private" is
// taken`, which told one tenant what another had named.
func TestSubscriptionIDsPerTenant(t *testing.T) {
	ctx := context.Background()
	s := enginetest.Open(t, engine.Config{Subscriptions: loopbackSubscriptions()})
	spec := claimcheck.SubscriptionSpec{ID: "b-private", URL: "http://127.0.0.1:9/"}
	if _, err := s.CreateSubscription(ctx, "beta", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSubscription(ctx, "acme", spec); err != nil {
		t.Fatalf("acme's b-private: %v; want it made, whatever beta has", err)
	}
	_, err := s.CreateSubscription(ctx, "acme", spec)
	if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "this tenant") {
		t.Fatalf("acme's b-private again: %v; want the tenant's own id taken", err)
	}
	if err := s.DeleteSubscription(ctx, "acme", "b-private"); err != nil {
		t.Fatal(err)
	}
	page, err := s.SubscriptionPage(ctx, "beta", "", 0)
	if err != nil || len(page.Subscriptions) != 1 || page.Subscriptions[0].ID != "b-private" {
		t.Fatalf("beta's after acme deleted its own: %+v, %v", page, err)
	}
}

// TestConfiguredTargetOfATenantsID: a tenant made "ops-new" over the
// API, then the operator configures a target "ops-new": the server
// starts (before, every replica's start failed on a UNIQUE constraint),
// and the tenant sees both, the target as config:ops-new.
func TestConfiguredTargetOfATenantsID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := enginetest.Open(t, engine.Config{Data: dir, Subscriptions: loopbackSubscriptions()})
	if _, err := s.CreateSubscription(ctx, claimcheck.DefaultTenant, claimcheck.SubscriptionSpec{ID: "ops-new", URL: "http://127.0.0.1:9/"}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	target := dispatch.Target{ID: "ops-new", URL: "http://127.0.0.1:9/ops", Secret: dispatch.NewSecret()}
	s = enginetest.Open(t, engine.Config{Data: dir, Subscriptions: loopbackSubscriptions(target)})
	page, err := s.SubscriptionPage(ctx, claimcheck.DefaultTenant, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sub := range page.Subscriptions {
		got = append(got, sub.ID+"/"+sub.Source)
	}
	if want := "config:ops-new/config ops-new/api"; strings.Join(got, " ") != want {
		t.Fatalf("subscriptions: %v, want %s", got, want)
	}
}

// TestConfiguredTargetsReadOnly: an operator's target, disabled in the
// config, is neither resumed nor deleted by its tenant: 403, naming the
// config file. Before, resume answered 204 and delivery followed.
func TestConfiguredTargetsReadOnly(t *testing.T) {
	ctx := context.Background()
	target := dispatch.Target{ID: "ops-b", URL: "http://127.0.0.1:9/ops", Secret: dispatch.NewSecret(), Disabled: true}
	s := enginetest.Open(t, engine.Config{Subscriptions: loopbackSubscriptions(target), ConfigFile: "/etc/claimcheck/claimcheck.yaml"})
	for name, op := range map[string]func(context.Context, string, string) error{
		"resume": s.ResumeSubscription, "delete": s.DeleteSubscription,
	} {
		err := op(ctx, claimcheck.DefaultTenant, "config:ops-b")
		if !errors.Is(err, claimcheck.ErrPermissionDenied) || !strings.Contains(err.Error(), "/etc/claimcheck/claimcheck.yaml (subscriptions.targets)") {
			t.Errorf("%s of config:ops-b: %v; want permission denied naming the config file", name, err)
		}
		if err := op(ctx, claimcheck.DefaultTenant, "ops-b"); !errors.Is(err, claimcheck.ErrNotFound) {
			t.Errorf("%s of ops-b: %v; want not found (no API subscription of that id)", name, err)
		}
	}
	page, err := s.SubscriptionPage(ctx, claimcheck.DefaultTenant, "", 0)
	if err != nil || len(page.Subscriptions) != 1 || page.Subscriptions[0].Enabled {
		t.Fatalf("after the refusals: %+v, %v; want config:ops-b, still disabled", page, err)
	}
}

// TestSubscriptionLimitPerTenant: past tenant_limits.subscriptions a
// create is refused, quota_exceeded naming the key; another tenant is
// not held by it, and a delete makes room.
func TestSubscriptionLimitPerTenant(t *testing.T) {
	ctx := context.Background()
	s := enginetest.Open(t, engine.Config{Subscriptions: loopbackSubscriptions(), TenantLimits: engine.TenantLimits{Subscriptions: 3}})
	for i := range 3 {
		if _, err := s.CreateSubscription(ctx, "acme", claimcheck.SubscriptionSpec{ID: fmt.Sprint("s", i), URL: "http://127.0.0.1:9/"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.CreateSubscription(ctx, "acme", claimcheck.SubscriptionSpec{URL: "http://127.0.0.1:9/"})
	if !errors.Is(err, claimcheck.ErrQuotaExceeded) || !strings.Contains(err.Error(), "tenant_limits.subscriptions") {
		t.Fatalf("the 4th: %v; want quota exceeded naming tenant_limits.subscriptions", err)
	}
	if _, err := s.CreateSubscription(ctx, "beta", claimcheck.SubscriptionSpec{URL: "http://127.0.0.1:9/"}); err != nil {
		t.Fatalf("another tenant's first: %v", err)
	}
	if err := s.DeleteSubscription(ctx, "acme", "s0"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSubscription(ctx, "acme", claimcheck.SubscriptionSpec{URL: "http://127.0.0.1:9/"}); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}

// TestSubscriptionLimitDefault: with the default limit a tenant has at
// most engine.DefaultMaxSubscriptionsPerTenant subscriptions, however
// many it asks for (before, 10,000 were made, and the server's idle CPU
// and memory grew with them).
func TestSubscriptionLimitDefault(t *testing.T) {
	ctx := context.Background()
	s := enginetest.Open(t, engine.Config{Subscriptions: loopbackSubscriptions()})
	made := 0
	for i := range engine.DefaultMaxSubscriptionsPerTenant + 10_000 {
		_, err := s.CreateSubscription(ctx, "acme", claimcheck.SubscriptionSpec{ID: fmt.Sprint("s", i), URL: "http://127.0.0.1:9/"})
		switch {
		case err == nil:
			made++
		case !errors.Is(err, claimcheck.ErrQuotaExceeded):
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if made != engine.DefaultMaxSubscriptionsPerTenant {
		t.Fatalf("made %d subscriptions, want %d", made, engine.DefaultMaxSubscriptionsPerTenant)
	}
	n := 0
	for cursor := ""; ; {
		page, err := s.SubscriptionPage(ctx, "acme", cursor, 7)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Subscriptions)
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if n != made {
		t.Fatalf("the pages list %d, want %d", n, made)
	}
}
