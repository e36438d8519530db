package sqlmeta

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta/sqlmeta/internal/statement"
)

// waitPrepared polls until the cache has text prepared; the preparer
// works in the background, and a test must not depend on how soon.
func waitPrepared(t *testing.T, c *statement.Cache, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c.Prepared(text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q was never prepared", text)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStatementCacheOnTheWriter runs a write statement through the
// single-connection SQLite writer until the cache has it prepared, then
// keeps using it in transactions: it must neither deadlock (the writer's
// only connection is the transaction's) nor change any result.
func TestStatementCacheOnTheWriter(t *testing.T) {
	s := openSQLiteStore(t)
	defer s.Close()
	if s.wc == nil || s.rc == nil || s.wc == s.rc {
		t.Fatal("SQLite store without a statement cache per pool")
	}
	const upsert = `INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`
	const read = `SELECT value FROM secrets WHERE name = ?`
	put := func(v string) {
		t.Helper()
		err := s.write(context.Background(), func(q *txq) error {
			_, err := q.exec(upsert, "k", v)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	get := func() string {
		t.Helper()
		var v string
		err := s.read(context.Background(), func(q *txq) error { return q.queryRow(read, "k").Scan(&v) })
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	put("a")
	put("b") // the second sighting queues it
	_ = get()
	_ = get()
	waitPrepared(t, s.wc, s.d.rebind(upsert))
	waitPrepared(t, s.rc, s.d.rebind(read))
	for _, v := range []string{"c", "d", "e"} {
		put(v)
		if got := get(); got != v {
			t.Fatalf("read %q after writing %q through the prepared statement", got, v)
		}
	}
	// A write statement never lands in the reader's cache.
	if s.rc.Prepared(s.d.rebind(upsert)) {
		t.Fatal("the reader pool prepared a write statement")
	}
}

// TestStatementCacheConcurrentUse has writers and readers use statements
// while they are being prepared, then closes the store with statements
// still queued: no error, no result from the wrong statement, and Close
// returns.
func TestStatementCacheConcurrentUse(t *testing.T) {
	s := openSQLiteStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				name := string(rune('a' + g))
				want := string(rune('a'+g)) + string(rune('0'+i%10))
				err := s.write(ctx, func(q *txq) error {
					_, err := q.exec(`INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`, name, want)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				var got string
				err = s.read(ctx, func(q *txq) error {
					return q.queryRow(`SELECT value FROM secrets WHERE name = ?`, name).Scan(&got)
				})
				if err == nil && got != want {
					err = fmt.Errorf("goroutine %d read %q, wrote %q", g, got, want)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Queue statements nobody will run again, then close at once.
	for i := range 3 {
		for range 2 {
			s.wc.Lookup("SELECT " + string(rune('1'+i)))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := s.wc.Lookup(`SELECT value FROM secrets WHERE name = ?`); got != nil {
		t.Fatal("a closed cache still hands out statements")
	}
}
