package sqlmeta

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
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
	55: createTombstones,          // claim_tombstones (0055_claim_tombstones.sql, history.go)
	56: partitionEvents,           // events by day (0056_events_by_day.sql, events_days.go)
	57: addTrailColumn,            // claim_tombstones.trail (0057_tombstone_trails.sql, trail_read.go)
	60: distributionKeys,          // (id, namespace) keys on PostgreSQL (0060_distribution_keys.sql)
	66: storeInlineBytesAsTheyAre, // inline_objects.data (0066_inline_objects.sql, inline.go)
}

// distributionKeys puts the namespace into every primary key of the
// tables that grow with claims, and into the foreign keys between them,
// on PostgreSQL (0060_distribution_keys.sql, ADR 0264): the keys a
// distributed PostgreSQL needs to distribute them by namespace. The
// foreign keys are dropped before the keys they reference and added
// back after, as (id, namespace) pairs: a claim and its blob, and a
// claim and its release, upload and progress rows, are in one namespace.
func distributionKeys(q *txq) error {
	if !q.d.writableCTEs { // PostgreSQL's syntax; SQLite keeps its keys
		return nil
	}
	for _, stmt := range []string{
		`ALTER TABLE claim_releases DROP CONSTRAINT claim_releases_claim_id_fkey`,
		`ALTER TABLE uploads DROP CONSTRAINT uploads_claim_id_fkey`,
		`ALTER TABLE upload_progress DROP CONSTRAINT upload_progress_claim_id_fkey`,
		`ALTER TABLE claims DROP CONSTRAINT claims_blob_id_fkey`,
		`ALTER TABLE blobs DROP CONSTRAINT blobs_pkey, ADD PRIMARY KEY (id, namespace)`,
		`ALTER TABLE claims DROP CONSTRAINT claims_pkey, ADD PRIMARY KEY (id, namespace),
			ADD FOREIGN KEY (blob_id, namespace) REFERENCES blobs (id, namespace)`,
		`ALTER TABLE claim_releases DROP CONSTRAINT claim_releases_pkey, ADD PRIMARY KEY (claim_id, consumer, namespace),
			ADD FOREIGN KEY (claim_id, namespace) REFERENCES claims (id, namespace)`,
		`ALTER TABLE uploads DROP CONSTRAINT uploads_pkey, ADD PRIMARY KEY (claim_id, namespace),
			ADD FOREIGN KEY (claim_id, namespace) REFERENCES claims (id, namespace)`,
		`ALTER TABLE upload_progress DROP CONSTRAINT upload_progress_pkey, ADD PRIMARY KEY (claim_id, namespace),
			ADD FOREIGN KEY (claim_id, namespace) REFERENCES claims (id, namespace)`,
		`ALTER TABLE claim_labels DROP CONSTRAINT claim_labels_pkey, ADD PRIMARY KEY (claim_id, label_key, namespace)`,
		`ALTER TABLE object_blocks DROP CONSTRAINT object_blocks_pkey,
			ADD CONSTRAINT object_blocks_pkey PRIMARY KEY USING INDEX object_blocks_key_ns`,
	} {
		if _, err := q.exec(stmt); err != nil {
			return fmt.Errorf("%s: %w", strings.Fields(stmt)[2], err)
		}
	}
	return nil
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

// oldestReader is the oldest schema version whose programs may run on a
// database this program migrated: the previous release's (PREVIOUS_RELEASE
// at the top of the repository). Every migration after it only adds, so a
// replica of that release serves on beside this one (ADR 0291;
// compat_test.go holds both). A migration that drops, renames or retypes
// what that release uses, or changes what its rows mean, raises it.
const oldestReader = 61

// oldestReaderMigration adds schema_migrations.oldest_reader.
const oldestReaderMigration = 65

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
// checks schema_migrations again after it holds the lock. A through
// other than 0 stops after that version (tests of a migration).
func (s *Store) migrate(ctx context.Context, through int64) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("sqlmeta: %w", err)
	}
	if through > 0 {
		ms = slices.DeleteFunc(ms, func(m migration) bool { return m.version > through })
	}
	for _, m := range ms {
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
			if m.version < oldestReaderMigration {
				_, err = q.exec(`INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, m.version, m.name)
				return err
			}
			_, err = q.exec(`INSERT INTO schema_migrations (version, name, oldest_reader) VALUES (?, ?, ?)`,
				m.version, m.name, oldestReader)
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlmeta: migration %s: %w", m.name, err)
		}
	}
	return s.checkNewerSchema(ctx, ms[len(ms)-1].version)
}

// checkNewerSchema refuses a database migrated by a newer program unless
// every migration this program does not know says programs of its schema
// may still run on it (ADR 0291): a newer schema may have tables or
// states this program would misread, and only its migrations know.
func (s *Store) checkNewerSchema(ctx context.Context, latest int64) error {
	var newest sql.NullInt64
	var lowest, highest int64
	err := s.read(ctx, func(q *txq) error {
		if err := q.queryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&newest); err != nil || newest.Int64 <= latest {
			return err
		}
		// A database newer than this program has had migration 0065,
		// which every program that knows it has applied.
		return q.queryRow(`SELECT MIN(oldest_reader), MAX(oldest_reader) FROM schema_migrations WHERE version > ?`, latest).
			Scan(&lowest, &highest)
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: read schema version: %w", err)
	}
	if newest.Int64 > latest && (lowest == 0 || highest > latest) {
		return fmt.Errorf("sqlmeta: database schema version %d is newer than this program's %d, and its migrations after %d do not let this program run on it: upgrade claimcheck",
			newest.Int64, latest, latest)
	}
	return nil
}
