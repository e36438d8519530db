package sqlmeta

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// TestUpgradeToSmallHistory: a store the program before migrations 0055
// and 0056 left (finished claims as rows, events in one table, a
// subscription part way through the feed) upgrades in place: its
// finished claims still answer gone with their reason, before and after
// they are compacted; their events are still listed; the subscription's
// cursor resumes at the same event; new events go to day partitions
// (PostgreSQL) and retention drops them whole, never past what the
// subscription holds.
func TestUpgradeToSmallHistory(t *testing.T) { onBothUpgrades(t, testUpgradeToSmallHistory) }

// onBothUpgrades runs an upgrade test on a SQLite file and, with
// TEST_DATABASE_URL, on a PostgreSQL schema of its own; open opens the
// store migrated through a version (0: all).
func onBothUpgrades(t *testing.T, test func(t *testing.T, open func(through int64) *Store)) {
	opener := func(t *testing.T, dsn string) func(int64) *Store {
		return func(through int64) *Store {
			s, err := open(context.Background(), dsn, through)
			if err != nil {
				t.Fatal(err)
			}
			if through > 0 && through < finishedClaimsMigration {
				withFinishedClaims(t, s)
			}
			return s
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		test(t, opener(t, "sqlite:"+filepath.Join(t.TempDir(), "meta.db")))
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("TEST_DATABASE_URL")
		if dsn == "" {
			t.Skip("TEST_DATABASE_URL is not set: upgrading SQLite only")
		}
		test(t, opener(t, postgresSchema(t, dsn)))
	})
}

// finishedClaimsMigration adds namespaces.finished_claims, which every
// finish of the code under test writes.
const finishedClaimsMigration = 64

// withFinishedClaims applies migration 0064 to a store migrated through
// an older version: the upgrade tests run this program's finishes on the
// older schema, and the column depends on no migration in between. The
// full upgrade after it then skips 0064 as applied.
func withFinishedClaims(t *testing.T, s *Store) {
	t.Helper()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m migration) bool { return m.version == finishedClaimsMigration })
	if i < 0 {
		t.Fatalf("no migration %d", finishedClaimsMigration)
	}
	err = s.write(context.Background(), func(q *txq) error {
		if _, err := q.exec(ms[i].sql); err != nil {
			return err
		}
		_, err := q.exec(`INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, ms[i].version, ms[i].name)
		return err
	})
	if err != nil {
		t.Fatalf("migration %s: %v", ms[i].name, err)
	}
}

func testUpgradeToSmallHistory(t *testing.T, open func(through int64) *Store) {
	ctx := claimcheck.WithActor(context.Background(), "key_upgrade")
	// Real time: the day partitions are made around it.
	base := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Millisecond)

	old := open(54)
	if err := old.write(ctx, func(q *txq) error {
		var v int64
		return q.queryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v)
	}); err != nil {
		t.Fatal(err)
	}
	lifeOfClaims(t, old, ctx, base, 0, 6) // six claims: created, read, expired, collected
	before, err := old.Events(ctx, 0, 1000)
	if err != nil || len(before) != 24 {
		t.Fatalf("events before the upgrade: %d, %v; want 24", len(before), err)
	}
	cursor := before[9].Seq
	if err := old.CreateSubscription(ctx, meta.Subscription{ID: "s1", Tenant: "default", URL: "http://127.0.0.1/",
		Secret: []byte("whsec_x"), Enabled: true, CreatedAt: base, Cursor: cursor, State: meta.SubscriptionActive}, 0); err != nil {
		t.Fatal(err)
	}
	_ = old.Close()

	s := open(0)
	defer s.Close()
	wantGone := func(when string) { t.Helper(); wantSixGone(t, ctx, s, when) }
	wantGone("upgraded")
	after, err := s.Events(ctx, 0, 1000)
	if err != nil || len(after) != len(before) {
		t.Fatalf("events after the upgrade: %d, %v; want %d", len(after), err, len(before))
	}
	for i := range after {
		if after[i].Seq != before[i].Seq || after[i].Kind != before[i].Kind || after[i].ClaimID != before[i].ClaimID {
			t.Fatalf("event %d after the upgrade: %+v, want %+v", i, after[i], before[i])
		}
	}
	feed, err := s.FeedEvents(ctx, "default", cursor, time.Now().Add(time.Hour).UnixNano(), 100, true)
	if err != nil || len(feed) != len(before)-10 || feed[0].Seq != before[10].Seq || len(feed[0].Labels) != 2 {
		t.Fatalf("feed after the cursor: %d events (first %+v), %v; want %d from seq %d with labels",
			len(feed), feed[0], err, len(before)-10, before[10].Seq)
	}

	// The subscription holds its claims' rows; once it has taken every
	// event, compaction turns them into tombstones.
	now := time.Now()
	if n, err := s.CompactHistory(ctx, now, 100); err != nil || n != 0 {
		t.Fatalf("CompactHistory under the subscription = %d, %v; want none", n, err)
	}
	// The dispatcher has looked at everything up to now.
	if err := s.AdvanceSubscription(ctx, "default", "s1", meta.SubscriptionProgress{Cursor: now.UnixNano(),
		State: meta.SubscriptionActive}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CompactHistory(ctx, now, 100); err != nil || n != 6 {
		t.Fatalf("CompactHistory = %d, %v; want all 6", n, err)
	}
	wantGone("compacted")

	// Events of a day to come go to that day's partition (PostgreSQL),
	// which retention drops whole once the day is past and delivered.
	ahead := now.Add(24 * time.Hour)
	if err := s.AppendEvents(ctx, []meta.Event{{At: ahead, Kind: "key_created", Tenant: "default"}}); err != nil {
		t.Fatal(err)
	}
	day := ahead.UnixNano() - ahead.UnixNano()%dayNanos
	if s.d.dayPartitions && !s.tableExists(t, dayPartition("events", day)) {
		t.Fatalf("no partition %s for an event of that day", dayPartition("events", day))
	}
	later := now.Add(3 * 24 * time.Hour)
	if _, err := s.PruneEvents(ctx, later, 1000); err != nil {
		t.Fatal(err)
	}
	left, err := s.Events(ctx, 0, 1000)
	if err != nil || len(left) != 1 || !left[0].At.Equal(ahead.Truncate(time.Nanosecond).UTC()) {
		t.Fatalf("after pruning under the subscription: %+v, %v; want the one event it has not taken", left, err)
	}
	// A day's partition goes once the subscription has looked past the
	// end of the day, not only past its last event.
	if err := s.AdvanceSubscription(ctx, "default", "s1", meta.SubscriptionProgress{Cursor: later.UnixNano(),
		State: meta.SubscriptionActive}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PruneEvents(ctx, later, 1000); err != nil {
		t.Fatal(err)
	}
	if left, err := s.Events(ctx, 0, 1000); err != nil || len(left) != 0 {
		t.Fatalf("after pruning: %d events, %v; want none", len(left), err)
	}
	if s.d.dayPartitions && s.tableExists(t, dayPartition("events", day)) {
		t.Errorf("partition %s not dropped", dayPartition("events", day))
	}
}

func (s *Store) tableExists(t *testing.T, name string) bool {
	t.Helper()
	var ok bool
	if err := s.w.QueryRowContext(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestUpgradeToTrails: a store with tombstones made before migration 0057
// (their events are rows) upgrades in place: the old tombstones get an
// empty trail and their events are still listed from the rows; claims
// compacted after the upgrade fold theirs into trails; every listing
// gives the same events as before; retention takes both kinds.
func TestUpgradeToTrails(t *testing.T) { onBothUpgrades(t, testUpgradeToTrails) }

// wantSixGone checks that the six claims of lifeOfClaims answer gone,
// expired, each with its four events.
func wantSixGone(t *testing.T, ctx context.Context, s *Store, when string) {
	t.Helper()
	for i := range 6 {
		c, err := s.Claim(ctx, historyClaimID(i))
		if err != nil || c.State != meta.ClaimDeleted || c.DeleteReason != meta.ReasonExpired {
			t.Errorf("%s: Claim(%d) = %s %s, %v; want gone, expired", when, i, c.State, c.DeleteReason, err)
		}
		if evs, err := s.ClaimEvents(ctx, historyClaimID(i), 0, 10); err != nil || len(evs) != 4 {
			t.Errorf("%s: events of claim %d: %d, %v; want 4", when, i, len(evs), err)
		}
	}
}

func testUpgradeToTrails(t *testing.T, open func(through int64) *Store) {
	ctx := claimcheck.WithActor(context.Background(), "key_upgrade")
	base := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Millisecond)
	old := open(56)
	lifeOfClaims(t, old, ctx, base, 0, 6)
	before, err := old.NamespaceEvents(ctx, "orders", time.Time{}, 0, 1000)
	if err != nil || len(before) != 24 {
		t.Fatalf("events before the upgrade: %d, %v; want 24", len(before), err)
	}
	// Three claims compacted as the program before 0057 did: a tombstone
	// of four columns, the events left as rows.
	if err := old.write(ctx, func(q *txq) error {
		ids := []string{historyClaimID(0), historyClaimID(1), historyClaimID(2)}
		if q.d.dayPartitions {
			if err := q.ensureDayPartitions("claim_tombstones", base.UnixNano(), base.Add(3*time.Hour).UnixNano()); err != nil {
				return err
			}
		}
		if _, err := q.exec(`INSERT INTO claim_tombstones (id, namespace, finished_at, reason)
			SELECT id, namespace, deleted_at, delete_reason FROM claims WHERE id IN (?, ?, ?)`, anys(ids)...); err != nil {
			return err
		}
		return q.deleteClaimRows(ids, func(int) {})
	}); err != nil {
		t.Fatal(err)
	}
	_ = old.Close()

	s := open(0)
	defer s.Close()
	same := func(when string) {
		t.Helper()
		got, err := s.NamespaceEvents(ctx, "orders", time.Time{}, 0, 1000)
		if err != nil || len(got) != len(before) {
			t.Fatalf("%s: %d events, %v; want %d", when, len(got), err, len(before))
		}
		for i := range got {
			if got[i] != before[i] {
				t.Fatalf("%s: event %d = %+v, want %+v", when, i, got[i], before[i])
			}
		}
		wantSixGone(t, ctx, s, when)
	}
	same("upgraded")
	if n, err := s.CompactHistory(ctx, time.Now(), 100); err != nil || n != 3 {
		t.Fatalf("CompactHistory after the upgrade = %d, %v; want the 3 claims with rows", n, err)
	}
	same("compacted after the upgrade")
	var rows int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM events WHERE claim_id <> ''`).Scan(&rows); err != nil || rows != 12 {
		t.Errorf("event rows after compaction: %d, %v; want the 12 of the tombstones made before the upgrade", rows, err)
	}
	if _, err := s.PruneHistory(ctx, time.Now().Add(48*time.Hour), 100); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 6; i++ {
		if evs, err := s.ClaimEvents(ctx, historyClaimID(i), 0, 10); err != nil || len(evs) != 0 {
			t.Errorf("events of claim %d after its tombstone was pruned: %d, %v; want none", i, len(evs), err)
		}
	}
}
