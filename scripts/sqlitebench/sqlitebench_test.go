// Package sqlitebench measures the two SQLite drivers claimcheck could use
// — modernc.org/sqlite (pure Go, transpiled C) and
// github.com/mattn/go-sqlite3 (cgo) — on the statements the metadata
// store runs most: one-row write transactions (put), point selects by
// primary key (redeem), and a page of 1000 updates in one transaction (the
// sweeper). The result and the decision are in docs/adr/0002-sqlite-driver.md.
//
// It is a module of its own so that the cgo driver never enters
// claimcheck's go.mod. Run it from this directory:
//
//	GOWORK=off go test -bench . -count 3
package sqlitebench

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3" // registers "sqlite3"
	_ "modernc.org/sqlite"          // registers "sqlite"
)

var drivers = []struct{ name, driver string }{
	{"modernc", "sqlite"},
	{"mattn", "sqlite3"},
}

// open opens a fresh database the way the store does: one connection (the
// store queues its writes on one), WAL, synchronous=NORMAL, busy timeout,
// foreign keys. The pragmas are executed as statements, so both drivers
// are configured identically whatever their DSN dialects.
func open(b *testing.B, driver string) *sql.DB {
	b.Helper()
	db, err := sql.Open(driver, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	for _, p := range []string{
		"PRAGMA busy_timeout = 10000",
		"PRAGMA journal_mode = WAL",
		"PRAGMA synchronous = NORMAL",
		"PRAGMA foreign_keys = ON",
		// A cut-down claims table: TEXT primary key, times as BIGINT, a
		// partial index on the due time.
		`CREATE TABLE claims (
			id         TEXT PRIMARY KEY,
			namespace  TEXT NOT NULL,
			state      TEXT NOT NULL,
			size       BIGINT NOT NULL,
			labels     TEXT,
			created_at BIGINT NOT NULL,
			due_at     BIGINT
		)`,
		"CREATE INDEX claims_due_at ON claims (due_at) WHERE due_at IS NOT NULL",
	} {
		if _, err := db.Exec(p); err != nil {
			b.Fatalf("%s: %v", p, err)
		}
	}
	return db
}

func id(i int) string { return fmt.Sprintf("c_%026d", i) }

// seed inserts n active claims in one transaction.
func seed(b *testing.B, db *sql.DB, n int) {
	b.Helper()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, err := tx.Exec(`INSERT INTO claims (id, namespace, state, size, labels, created_at, due_at)
			VALUES (?, 'ns', 'active', 1000, '{"team":"video"}', ?, ?)`, id(i), i, i+1_000_000); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkInsertTx: one transaction per inserted row, like put step 1.
func BenchmarkInsertTx(b *testing.B) {
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			db := open(b, d.driver)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO claims (id, namespace, state, size, labels, created_at, due_at)
					VALUES (?, 'ns', 'pending', 1000, '{"team":"video"}', ?, ?)`, id(i), i, i+3600); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
		})
	}
}

// BenchmarkPointSelect: load one claim by primary key, like redeem.
func BenchmarkPointSelect(b *testing.B) {
	const rows = 100_000
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			db := open(b, d.driver)
			seed(b, db, rows)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				var (
					state  string
					size   int64
					labels sql.NullString
					due    sql.NullInt64
				)
				err := db.QueryRowContext(ctx, `SELECT state, size, labels, due_at FROM claims WHERE id = ?`,
					id((i*7919)%rows)).Scan(&state, &size, &labels, &due)
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "selects/s")
		})
	}
}

// BenchmarkUpdatePage: one transaction that updates 1000 rows one
// statement each, the shape of a sweeper page; every row leaves the
// partial due-time index.
func BenchmarkUpdatePage(b *testing.B) {
	const page = 1000
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			db := open(b, d.driver)
			ctx := context.Background()
			// Enough rows for every iteration b.Loop may run; seeded per
			// round so each page updates rows that are still due.
			seeded, next := 0, 0
			for b.Loop() {
				if next+page > seeded {
					b.StopTimer()
					tx, err := db.Begin()
					if err != nil {
						b.Fatal(err)
					}
					for i := seeded; i < seeded+100*page; i++ {
						if _, err := tx.Exec(`INSERT INTO claims (id, namespace, state, size, labels, created_at, due_at)
							VALUES (?, 'ns', 'active', 1000, NULL, ?, ?)`, id(i), i, i); err != nil {
							b.Fatal(err)
						}
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
					seeded += 100 * page
					b.StartTimer()
				}
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				stmt, err := tx.PrepareContext(ctx, `UPDATE claims SET state = 'deleted', due_at = NULL WHERE id = ? AND state = 'active'`)
				if err != nil {
					b.Fatal(err)
				}
				for i := next; i < next+page; i++ {
					res, err := stmt.ExecContext(ctx, id(i))
					if err != nil {
						b.Fatal(err)
					}
					if n, _ := res.RowsAffected(); n != 1 {
						b.Fatalf("row %d: %d rows updated", i, n)
					}
				}
				stmt.Close()
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				next += page
			}
			b.ReportMetric(float64(b.N*page)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
