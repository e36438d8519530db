package sqlmeta

import (
	"os"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// TestSubscriptionBatchMigration: migration 0041 runs on a store that
// has subscriptions. They keep everything they had and take the
// dispatcher's default mode (events_per_request 0); a subscription made
// afterwards keeps its own.
func TestSubscriptionBatchMigration(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := open(t.Context(), "sqlite:"+t.TempDir()+"/meta.db", 40)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		testSubscriptionBatchMigration(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("TEST_DATABASE_URL")
		if dsn == "" {
			t.Skip("TEST_DATABASE_URL is not set: skipping the PostgreSQL run of the migration")
		}
		s := openPostgresStoreThrough(t, dsn, 40)
		defer s.Close()
		testSubscriptionBatchMigration(t, s)
	})
}

func testSubscriptionBatchMigration(t *testing.T, s *Store) {
	ctx := t.Context()
	// A subscription as the schema of 0040 holds it.
	if _, err := s.w.ExecContext(ctx, s.d.rebind(`INSERT INTO subscriptions (id, tenant, url, types, secret, created_at, cursor_seq, delivered)
		VALUES ('old', 'acme', 'https://hooks.example.com/cc', 'expired_unread', 'c2VjcmV0', 1, 7, 3)`)); err != nil {
		t.Fatal(err)
	}
	if err := s.migrate(ctx, 0); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := s.CreateSubscription(ctx, meta.Subscription{ID: "new", Tenant: "acme", URL: "https://hooks.example.com/bulk",
		Secret: []byte("secret"), Enabled: true, CreatedAt: time.Unix(0, 2), Cursor: 9, EventsPerRequest: 50}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.AdvanceSubscription(ctx, "acme", "old", meta.SubscriptionProgress{Cursor: 8, State: meta.SubscriptionActive, Delivered: 1}); err != nil {
		t.Fatal(err)
	}
	subs, err := s.Subscriptions(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 2 {
		t.Fatalf("subscriptions: %+v, want old and new", subs)
	}
	old, made := subs[1], subs[0]
	if old.ID != "old" || old.EventsPerRequest != 0 || old.URL != "https://hooks.example.com/cc" || len(old.Types) != 1 ||
		string(old.Secret) != "secret" || !old.Enabled || old.State != meta.SubscriptionActive || old.Cursor != 8 || old.Delivered != 4 {
		t.Errorf("the subscription from before the migration: %+v", old)
	}
	if made.ID != "new" || made.EventsPerRequest != 50 {
		t.Errorf("a subscription made after it: %+v, want events_per_request 50", made)
	}
}
