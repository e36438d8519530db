package sqlmeta

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// TestReadOnlyConnectionNotKept: a pooled connection that finds its
// server read-only (a primary demoted to a standby under it, or a dial
// that landed on a standby) answers the write with an error the
// contract reports as unavailable (503, retry), and is not kept: once
// a writable server is back, the next write succeeds on a new
// connection instead of failing on the read-only one until it ages out
// (ADR 0288).
//
// The demotion is played with a role of the test's own whose sessions
// default to read-only transactions: its pooled connection is ended, the
// pool dials a read-only session, and then the role's setting is reset
// (the "new primary" takes writes on new sessions).
func TestReadOnlyConnectionNotKept(t *testing.T) {
	dsn := os.Getenv("TEST_DATABASE_URL")
	if dsn == "" {
		t.Skip("TEST_DATABASE_URL is not set: the read-only refusal is PostgreSQL's")
	}
	ctx := context.Background()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() }) // after the role's cleanup below
	role := "readonly_" + strings.ToLower(rand.Text())[:12]
	if _, err := admin.ExecContext(ctx, "CREATE ROLE "+role+" LOGIN SUPERUSER"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		terminate(t, admin, role)
		_, _ = admin.ExecContext(context.Background(), "DROP ROLE "+role)
	})
	u, err := url.Parse(postgresSchema(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	q := u.Query()
	q.Set("pool_max_conns", "1") // one connection: the one the demotion hits
	u.RawQuery = q.Encode()
	s, err := open(ctx, u.String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	take := func(holder string) error {
		_, err := s.TryLease(ctx, "readonly-probe", holder, time.Now(), time.Minute)
		return err
	}
	if err := take("before"); err != nil {
		t.Fatalf("lease on a writable server: %v", err)
	}

	// Demote: new sessions of the role are read-only, its session ends.
	if _, err := admin.ExecContext(ctx, "ALTER ROLE "+role+" SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	terminate(t, admin, role)
	var refused error
	for range 5 { // the first attempt may meet the ended session
		if err := take("during"); err != nil && pgCode(err) == errReadOnly {
			refused = err
			break
		}
	}
	if refused == nil {
		t.Fatal("no write was refused as read-only after the demotion")
	}
	if pub := meta.PublicError("lease", refused); !errors.Is(pub, claimcheck.ErrUnavailable) {
		t.Errorf("a read-only refusal reports %v, want unavailable (503, retry)", pub)
	}

	// Promote: the role's new sessions take writes again.
	if _, err := admin.ExecContext(ctx, "ALTER ROLE "+role+" RESET default_transaction_read_only"); err != nil {
		t.Fatal(err)
	}
	if err := take("after"); err != nil {
		t.Errorf("write after a writable server is back = %v; the pool kept the read-only connection", err)
	}
}

// terminate ends every session of role.
func terminate(t *testing.T, admin *sql.DB, role string) {
	t.Helper()
	if _, err := admin.ExecContext(context.Background(),
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role); err != nil {
		t.Fatal(err)
	}
}
