package sqlmeta

import (
	"os"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// TestSubscriptionsByTenantMigration: migration 0062 keys subscriptions
// by (tenant, id) and moves the configured ones to their own id space,
// their cursors kept (ADR 0269). Before it, an API subscription "ops-new"
// made the start fail once the operator configured a target "ops-new"
// (a UNIQUE constraint on id); after it, both are there.
func TestSubscriptionsByTenantMigration(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := open(t.Context(), "sqlite:"+t.TempDir()+"/meta.db", 61)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		testSubscriptionsByTenantMigration(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("TEST_DATABASE_URL")
		if dsn == "" {
			t.Skip("TEST_DATABASE_URL is not set: skipping the PostgreSQL run of the migration")
		}
		s := openPostgresStoreThrough(t, dsn, 61)
		defer s.Close()
		testSubscriptionsByTenantMigration(t, s)
	})
}

func testSubscriptionsByTenantMigration(t *testing.T, s *Store) {
	ctx := t.Context()
	// As the schema of 0061 holds them: a configured target and a
	// tenant's subscription.
	for _, stmt := range []string{
		`INSERT INTO subscriptions (id, tenant, url, secret, source, created_at, cursor_seq, delivered, enabled)
			VALUES ('ops-b', 'acme', 'http://127.0.0.1/ops', 'c2VjcmV0', 'config', 1, 7, 3, 0)`,
		`INSERT INTO subscriptions (id, tenant, url, secret, source, created_at, cursor_seq)
			VALUES ('ops-new', 'acme', 'http://127.0.0.1/mine', 'c2VjcmV0', 'api', 1, 5)`,
	} {
		if _, err := s.w.ExecContext(ctx, s.d.rebind(stmt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.migrate(ctx, 0); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	subs, err := s.Subscriptions(ctx, "acme")
	if err != nil || len(subs) != 2 {
		t.Fatalf("subscriptions after the migration: %+v, %v", subs, err)
	}
	if c := subs[0]; c.ID != "config:ops-b" || c.Source != meta.SourceConfig || c.Cursor != 7 || c.Delivered != 3 || c.Enabled {
		t.Errorf("the configured target: %+v; want config:ops-b, disabled, its cursor and count kept", c)
	}
	if a := subs[1]; a.ID != "ops-new" || a.Source != meta.SourceAPI || a.Cursor != 5 {
		t.Errorf("the tenant's subscription: %+v", a)
	}
	// The operator configures a target of the API subscription's name.
	target := func(id string, enabled bool) meta.Subscription {
		return meta.Subscription{ID: meta.ConfigIDPrefix + id, Tenant: "acme", URL: "http://127.0.0.1/t", Secret: []byte("x"),
			Enabled: enabled, CreatedAt: time.Unix(0, 9), Cursor: 9, State: meta.SubscriptionActive}
	}
	if err := s.SyncConfigSubscriptions(ctx, []meta.Subscription{target("ops-b", false), target("ops-new", true)}); err != nil {
		t.Fatalf("a configured target of an API subscription's id: %v", err)
	}
	subs, err = s.Subscriptions(ctx, "acme")
	if err != nil || len(subs) != 3 || subs[0].ID != "config:ops-b" || subs[0].Cursor != 7 || subs[1].ID != "config:ops-new" || subs[2].ID != "ops-new" {
		t.Fatalf("after the sync: %+v, %v", subs, err)
	}
	// A dead-lettered target is active again at the next start.
	if err := s.AdvanceSubscription(ctx, "acme", "config:ops-new", meta.SubscriptionProgress{Cursor: 9,
		State: meta.SubscriptionDeadLettered, Attempts: 7, FailingSince: time.Unix(0, 9)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncConfigSubscriptions(ctx, []meta.Subscription{target("ops-b", false), target("ops-new", true)}); err != nil {
		t.Fatal(err)
	}
	if subs, err := s.Subscriptions(ctx, "acme"); err != nil || subs[1].State != meta.SubscriptionActive || subs[1].Attempts != 0 {
		t.Fatalf("a dead-lettered target after a start: %+v, %v; want active", subs[1], err)
	}
	// Another tenant may have the same id.
	if err := s.CreateSubscription(ctx, meta.Subscription{ID: "ops-new", Tenant: "beta", URL: "http://127.0.0.1/", Secret: []byte("x"),
		Enabled: true, CreatedAt: time.Unix(0, 9), State: meta.SubscriptionActive}, 0); err != nil {
		t.Fatalf("beta's ops-new: %v", err)
	}
	// A server of the version before the migration put a configured row
	// back under its bare id: the next sync gives it its prefix again.
	if _, err := s.w.ExecContext(ctx, s.d.rebind(`UPDATE subscriptions SET id = 'ops-b' WHERE id = 'config:ops-b'`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncConfigSubscriptions(ctx, []meta.Subscription{target("ops-b", false)}); err != nil {
		t.Fatal(err)
	}
	subs, err = s.Subscriptions(ctx, "acme")
	if err != nil || len(subs) != 2 || subs[0].ID != "config:ops-b" || subs[0].Cursor != 7 || subs[1].ID != "ops-new" {
		t.Fatalf("after a sync over an older server's row: %+v, %v", subs, err)
	}
}
