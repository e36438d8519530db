package sqlmeta

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/internal/testkit/release"
)

// The expand/contract rule (ADR 0291): every migration after the
// previous release's schema only adds. A replica of the previous release
// keeps serving while the first replica of this one migrates the
// database, so every table and column it reads or writes must still be
// there with the same type, and every row it inserts must still be
// accepted: a column added to a table it inserts into is nullable or has
// a default. Dropping, renaming or retyping waits for the release after
// the one that stopped using the column (the contract step).

// schemaColumn is what the previous release relies on of one column.
type schemaColumn struct {
	typ        string
	notNull    bool
	hasDefault bool
}

// schemaColumns maps table to column name to column, for the tables of
// the store's schema (its PostgreSQL schema, or the SQLite file).
func schemaColumns(t *testing.T, s *Store) map[string]map[string]schemaColumn {
	t.Helper()
	out := map[string]map[string]schemaColumn{}
	add := func(table, name, typ string, notNull, hasDefault bool) {
		if out[table] == nil {
			out[table] = map[string]schemaColumn{}
		}
		out[table][name] = schemaColumn{typ: strings.ToLower(typ), notNull: notNull, hasDefault: hasDefault}
	}
	err := s.read(context.Background(), func(q *txq) error {
		// A key column is never left out of an insert, so SQLite's
		// nullable keys count as NOT NULL, as PostgreSQL's are.
		query := `SELECT m.name, p.name, p.type, p."notnull" OR p.pk > 0, p.dflt_value IS NOT NULL
			FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'`
		if q.d.writableCTEs { // PostgreSQL
			query = `SELECT table_name, column_name, data_type, is_nullable = 'NO', column_default IS NOT NULL
				FROM information_schema.columns WHERE table_schema = current_schema()`
		}
		rows, err := q.query(query)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var table, name, typ string
			var notNull, hasDefault bool
			if err := rows.Scan(&table, &name, &typ, &notNull, &hasDefault); err != nil {
				return err
			}
			add(table, name, typ, notNull, hasDefault)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("read the schema: %v", err)
	}
	return out
}

// breaksPreviousRelease lists what in head a binary that ran on base
// would trip over: a table or column gone, a column of another type, a
// column its inserts do not fill that now must be filled.
func breaksPreviousRelease(base, head map[string]map[string]schemaColumn) []string {
	var out []string
	for table, cols := range base {
		now, ok := head[table]
		if !ok {
			out = append(out, fmt.Sprintf("table %s is gone", table))
			continue
		}
		for name, was := range cols {
			is, ok := now[name]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("column %s.%s is gone", table, name))
			case is.typ != was.typ:
				out = append(out, fmt.Sprintf("column %s.%s changed type from %s to %s", table, name, was.typ, is.typ))
			case is.notNull && !is.hasDefault && !was.notNull:
				out = append(out, fmt.Sprintf("column %s.%s became NOT NULL without a default", table, name))
			case was.hasDefault && !is.hasDefault && is.notNull:
				out = append(out, fmt.Sprintf("column %s.%s lost its default", table, name))
			}
		}
		for name, is := range now {
			if _, ok := cols[name]; !ok && is.notNull && !is.hasDefault {
				out = append(out, fmt.Sprintf("new column %s.%s is NOT NULL without a default: the previous release's inserts into %s fail", table, name, table))
			}
		}
	}
	slices.Sort(out)
	return out
}

// onBothDialects runs test on a SQLite file and, with TEST_DATABASE_URL,
// on a PostgreSQL schema of its own; dsn names the empty database.
func onBothDialects(t *testing.T, test func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, "sqlite:"+filepath.Join(t.TempDir(), "meta.db")) })
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("TEST_DATABASE_URL")
		if dsn == "" {
			t.Skip("TEST_DATABASE_URL is not set: SQLite only")
		}
		test(t, postgresSchema(t, dsn))
	})
}

// migrated opens dsn migrated through a version (0: all), and closes it
// at the end of the test.
func migrated(t *testing.T, dsn string, through int64) *Store {
	t.Helper()
	s, err := open(context.Background(), dsn, through)
	if err != nil {
		t.Fatalf("migrate through %d: %v", through, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestMigrationsKeepThePreviousReleaseRunning: the schema of every
// migration since the previous release still holds every table and
// column that release uses, as it used them.
func TestMigrationsKeepThePreviousReleaseRunning(t *testing.T) {
	_, base := release.Previous(t)
	if base != oldestReader {
		t.Fatalf("PREVIOUS_RELEASE names schema %d, the migrations let programs of %d run (oldestReader): a release moves both", base, oldestReader)
	}
	onBothDialects(t, func(t *testing.T, dsn string) {
		before := schemaColumns(t, migrated(t, dsn, base))
		after := schemaColumns(t, migrated(t, dsn, 0))
		if bad := breaksPreviousRelease(before, after); len(bad) > 0 {
			t.Fatalf("the migrations after %d break the previous release (ADR 0291):\n%s", base, strings.Join(bad, "\n"))
		}
	})
}

// TestBreakingMigrationsAreCaught: each contract step, run right after
// the previous release's schema, is named by the check.
func TestBreakingMigrationsAreCaught(t *testing.T) {
	_, base := release.Previous(t)
	for _, tc := range []struct{ name, sql, want string }{
		{"drop column", `ALTER TABLE namespaces DROP COLUMN allot_key`, "column namespaces.allot_key is gone"},
		{"rename column", `ALTER TABLE namespaces RENAME COLUMN allot_key TO allotment_key`, "column namespaces.allot_key is gone"},
		{"drop table", `DROP TABLE namespace_holds`, "table namespace_holds is gone"},
		{"required column", `CREATE TABLE holds_new (namespace TEXT PRIMARY KEY, reason TEXT NOT NULL DEFAULT '', held_at BIGINT NOT NULL, owner TEXT NOT NULL);
			DROP TABLE namespace_holds; ALTER TABLE holds_new RENAME TO namespace_holds`, "new column namespace_holds.owner is NOT NULL without a default"},
		{"lost default", `CREATE TABLE holds_new (namespace TEXT PRIMARY KEY, reason TEXT NOT NULL, held_at BIGINT NOT NULL);
			DROP TABLE namespace_holds; ALTER TABLE holds_new RENAME TO namespace_holds`, "column namespace_holds.reason lost its default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onBothDialects(t, func(t *testing.T, dsn string) {
				s := migrated(t, dsn, base)
				before := schemaColumns(t, s)
				err := s.write(context.Background(), func(q *txq) error {
					for stmt := range strings.SplitSeq(tc.sql, ";") {
						if _, err := q.exec(stmt); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				bad := breaksPreviousRelease(before, schemaColumns(t, s))
				if !slices.ContainsFunc(bad, func(b string) bool { return strings.HasPrefix(b, tc.want) }) {
					t.Fatalf("the check said %q, want %q", bad, tc.want)
				}
			})
		})
	}
}

// TestNewerSchemaLetsOldestReaderRun: a database a newer program
// migrated is served by this one when every migration it does not know
// names this program's schema or an older one as its oldest reader, and
// refused when one names a newer one or none.
func TestNewerSchemaLetsOldestReaderRun(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	latest := ms[len(ms)-1].version
	for _, tc := range []struct {
		name    string
		readers []int64
		runs    bool
	}{
		{"readers up to this program", []int64{oldestReader, latest}, true},
		{"a reader newer than this program", []int64{latest, latest + 1}, false},
		{"a migration that names none", []int64{latest, 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onBothDialects(t, func(t *testing.T, dsn string) {
				s := migrated(t, dsn, 0)
				err := s.write(context.Background(), func(q *txq) error {
					for i, r := range tc.readers {
						if _, err := q.exec(`INSERT INTO schema_migrations (version, name, oldest_reader) VALUES (?, ?, ?)`,
							latest+1+int64(i), "future", r); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				again, err := open(context.Background(), dsn, 0)
				if err == nil {
					_ = again.Close()
				}
				if runs := err == nil; runs != tc.runs {
					t.Fatalf("open on schema %d with readers %v: %v, want it to run: %v", latest+int64(len(tc.readers)), tc.readers, err, tc.runs)
				}
			})
		})
	}
}
