package sqlmeta

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Migrations are numbered files NNNN_name.sql, applied in order, each in
// its own transaction together with its row in schema_migrations, so a
// crash leaves the schema at a migration boundary. Every file must run
// unchanged on SQLite and PostgreSQL. Applied files are never edited: a
// change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// afterMigration are steps in Go that complete a migration, run right
// after its file in the same transaction: data copies that need what the
// two dialects spell differently (JSON functions), while the file itself
// stays the same on both.
var afterMigration = map[int64]func(q *txq) error{
	22: backfillLabels, // claim_labels from claims.labels (0022_claim_labels.sql)
	31: deferNamespaceKeys,
	55: createTombstones, // claim_tombstones (0055_claim_tombstones.sql, history.go)
	56: partitionEvents,  // events by day (0056_events_by_day.sql, events_days.go)
}

// deferNamespaceKeys makes the namespace foreign keys of claims and blobs
// checked at commit on PostgreSQL (0031_deferred_namespace_keys.sql).
func deferNamespaceKeys(q *txq) error {
	if !q.d.deferredNamespaceKeys {
		return nil
	}
	for _, t := range []string{"claims", "blobs"} {
		if _, err := q.exec(`ALTER TABLE ` + t + ` ALTER CONSTRAINT ` + t + `_namespace_fkey DEFERRABLE INITIALLY DEFERRED`); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

// migrateUpTo, when positive, stops migrate after that version: the
// upgrade tests build a store as an older program left it.
var migrateUpTo int64

type migration struct {
	version int64
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a number", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// migrate applies the migrations the database does not have yet. Several
// processes may run it at once: on SQLite the write transaction (BEGIN
// IMMEDIATE) serialises them, on PostgreSQL an advisory lock does, and each
// checks schema_migrations again after it holds the lock.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("sqlmeta: %w", err)
	}
	for _, m := range ms {
		if migrateUpTo > 0 && m.version > migrateUpTo {
			return nil // a test building a store of an older version
		}
		err := s.write(ctx, func(q *txq) error {
			if s.d.migrationLock != "" {
				if _, err := q.exec(s.d.migrationLock); err != nil {
					return err
				}
			}
			if _, err := q.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
				version BIGINT PRIMARY KEY,
				name    TEXT NOT NULL
			)`); err != nil {
				return err
			}
			var one int
			err := q.queryRow(`SELECT 1 FROM schema_migrations WHERE version = ?`, m.version).Scan(&one)
			if err == nil {
				return nil // applied already
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if _, err := q.exec(m.sql); err != nil {
				return err
			}
			if after := afterMigration[m.version]; after != nil {
				if err := after(q); err != nil {
					return err
				}
			}
			_, err = q.exec(`INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlmeta: migration %s: %w", m.name, err)
		}
	}
	// A database migrated by a newer binary may have tables or states this
	// one does not know; refuse rather than corrupt it.
	var newest sql.NullInt64
	err = s.read(ctx, func(q *txq) error {
		return q.queryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&newest)
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: read schema version: %w", err)
	}
	if latest := ms[len(ms)-1].version; newest.Int64 > latest {
		return fmt.Errorf("sqlmeta: database schema version %d is newer than this program's %d: upgrade claimcheck", newest.Int64, latest)
	}
	return nil
}
