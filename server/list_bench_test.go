package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/sweep"
)

// BenchmarkListOverHTTP measures a listing's latency through the Go
// client and a server on loopback, over a namespace of LIST_CLAIMS claims
// (default 100,000; docs/PERFORMANCE-HISTORY.md has 1,000,000) on SQLite: a label
// that matches 10 of them, the newest page of 100, a page of 100 deep
// into the namespace (by cursor), and the soonest-expiring page of 100.
// The claims are inserted with SQL before the timer (two labels each), so
// the setup takes a minute at a million.
//
//	LIST_CLAIMS=1000000 go test -run '^$' -bench ListOverHTTP -benchtime 200x ./server
func BenchmarkListOverHTTP(b *testing.B) {
	n := 100_000
	if s := os.Getenv("LIST_CLAIMS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1000 {
			b.Fatalf("LIST_CLAIMS=%q: want a number of at least 1000", s)
		}
		n = v
	}
	ctx := context.Background()
	dir := b.TempDir()
	path := filepath.Join(dir, "claimcheck.db")
	m, err := sqlmeta.Open(ctx, "sqlite:"+path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Duration(n) * time.Millisecond)
	seedListing(b, path, base, n)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := enginetest.Open(b, engine.Config{Data: dir, MetaStore: m, Logger: quiet, Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{"big": {}}})
	srv := httptest.NewServer(server.New(server.Config{Claims: store, Logger: quiet}))
	defer srv.Close()
	c, err := client.New(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	mid, err := c.List(ctx, "big", claimcheck.ListOptions{Limit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		opts claimcheck.ListOptions
		want int
	}{
		{"label_matching_10", claimcheck.ListOptions{Labels: map[string]string{"run": "needle"}}, 10},
		{"newest_100", claimcheck.ListOptions{Limit: 100}, 100},
		{"after_cursor_100", claimcheck.ListOptions{Limit: 100, Cursor: mid.Next}, 100},
		{"expiring_100", claimcheck.ListOptions{Order: claimcheck.ListExpiring, Limit: 100}, 100},
	} {
		b.Run(fmt.Sprintf("%s/claims=%d", bc.name, n), func(b *testing.B) {
			for b.Loop() {
				page, err := c.List(ctx, "big", bc.opts)
				if err != nil || len(page.Claims) != bc.want {
					b.Fatalf("%d claims, %v; want %d", len(page.Claims), err, bc.want)
				}
			}
		})
	}
}

// seedListing inserts n active claims of namespace "big" (one blob),
// created a millisecond apart, labelled run=r<i> and wf=w; ten of them
// run=needle.
func seedListing(b *testing.B, path string, base time.Time, n int) {
	b.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	exec := func(q string, args ...any) {
		if _, err := tx.Exec(q, args...); err != nil {
			b.Fatal(err)
		}
	}
	exec(`INSERT INTO namespaces (name, used_bytes, active_claims) VALUES ('big', ?, ?)`, int64(n)*100, n)
	exec(`INSERT INTO blobs (id, namespace, digest, dedupable, size, stored_size, compression, object_key, state,
		refcount, created_at, state_at, version) VALUES ('b_seed', 'big', ?, 1, 100, 100, 'none', 'big/b_seed',
		'committed', ?, ?, ?, 1)`, claimcheck.DigestOf([]byte("seed")), n, base.UnixNano(), base.UnixNano())
	const batch = 300
	for start := 0; start < n; start += batch {
		var claims, labels []string
		var cargs, largs []any
		for i := start; i < min(start+batch, n); i++ {
			id := fmt.Sprintf("cc_seed%018d", i)
			created := base.Add(time.Duration(i) * time.Millisecond).UnixNano()
			expires := created + int64(24*time.Hour)
			run := "r" + strconv.Itoa(i)
			if i%(n/10) == 0 {
				run = "needle"
			}
			claims = append(claims, "(?, 'big', 'b_seed', 'active', 100, 0, ?, ?, ?, 'expired', 1, ?)")
			cargs = append(cargs, id, created, expires, expires, fmt.Sprintf(`{"run":%q,"wf":"w"}`, run))
			labels = append(labels, "(?, 'big', 'run', ?, ?)", "(?, 'big', 'wf', 'w', ?)")
			largs = append(largs, id, run, created, id, created)
		}
		exec(`INSERT INTO claims (id, namespace, blob_id, state, size, reserved_bytes, created_at, expires_at, due_at,
			due_reason, consumers, labels) VALUES `+strings.Join(claims, ", "), cargs...)
		exec(`INSERT INTO claim_labels (claim_id, namespace, label_key, label_value, created_at) VALUES `+strings.Join(labels, ", "), largs...)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
