package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" database/sql driver
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect is everything that differs between the SQL databases the store
// runs on. The queries themselves are written once, in the common subset of
// SQLite and PostgreSQL, with ? placeholders; anything else belongs here.
type dialect struct {
	name string

	// dollarPlaceholders rewrites ? to $1, $2, ... (PostgreSQL).
	dollarPlaceholders bool

	// lockRow is appended to a SELECT that reads a row the transaction is
	// going to change, and skipLocked to a SELECT that takes a page of due
	// rows. Both are empty on SQLite, where a write transaction already
	// holds the only write lock of the database.
	lockRow    string
	skipLocked string

	// migrationLock, when set, is executed first in every migration
	// transaction so that several processes starting at once apply each
	// migration once (SQLite needs nothing: BEGIN IMMEDIATE serialises
	// them).
	migrationLock string

	// releasesOf is a scalar subquery, for a query on claims, giving
	// the consumers that released the claim as a JSON array of strings
	// in release order (NULL or "[]" when none).
	releasesOf string

	// deferredNamespaceKeys: the foreign keys from claims and blobs to
	// namespaces are checked at commit (migration 0031), so a put can
	// insert its rows before it locks its namespace's row.
	deferredNamespaceKeys bool

	// dayPartitions: the history tables (claim_tombstones) are
	// partitioned by day (PostgreSQL), so retention drops a whole day's
	// partition instead of deleting its rows one by one (history.go).
	dayPartitions bool

	// writableCTEs: a WITH clause may hold INSERT and UPDATE statements
	// (PostgreSQL), so two writes that do not need each other's results
	// go to the database as one statement, one round trip.
	writableCTEs bool

	// namespaceRouting: statements over a list of claim or blob ids also
	// name the namespace they are in (oneNamespace), so that a PostgreSQL
	// distributed by namespace routes each to one shard (ADR 0264).
	// SQLite is never distributed, and its planner, which has no
	// statistics, would take the namespace's index over the list (an
	// equality on an index led by the namespace is estimated at ten rows,
	// a list of 250 ids at 250 lookups) and read every row of the
	// namespace for each statement: there the condition is left out. A
	// lookup of one id that names its namespace (inNamespace) keeps the
	// condition everywhere: one id is the cheaper estimate.
	namespaceRouting bool

	// snapshotReads runs reads in a transaction, which gives the
	// statements of one read a single snapshot (Store.read).
	snapshotReads bool

	// uninterruptedWrites: once a write transaction has begun, its
	// statements cannot wait for anyone (SQLite: BEGIN IMMEDIATE took the
	// database's one write lock, and readers never block the writer in
	// WAL mode), so they run without the request's cancellation (see
	// Store.runTx).
	uninterruptedWrites bool

	// cacheStatements keeps statements prepared across transactions
	// (internal/statement); pgx does that by itself on PostgreSQL.
	cacheStatements bool

	// open returns the pool for write transactions and the pool for read
	// transactions (the same pool where the database needs no split).
	open func(ctx context.Context, target string) (w, r *sql.DB, err error)

	// isUniqueViolation reports a unique index violation; retryable reports
	// an error after which the whole transaction may simply be run again
	// (serialisation failures, deadlocks detected by the server).
	isUniqueViolation func(error) bool
	retryable         func(error) bool

	// observe, when set, is given the text of every statement the store
	// runs: a test's view of what an operation sends (distribution_test.go).
	observe func(query string)
}

// rebind rewrites the ? placeholders of q for the dialect. Queries never
// contain ? inside string literals, so a plain scan is enough. It runs
// for every statement, so it copies the text between placeholders whole.
func (d *dialect) rebind(q string) string {
	if !d.dollarPlaceholders {
		return q
	}
	marks := strings.Count(q, "?")
	if marks == 0 {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + marks*len(strconv.Itoa(marks)))
	for n := 1; ; n++ {
		i := strings.IndexByte(q, '?')
		if i < 0 {
			b.WriteString(q)
			return b.String()
		}
		b.WriteString(q[:i])
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
		q = q[i+1:]
	}
}

// sqliteDialect: modernc.org/sqlite (pure Go), chosen in docs/adr/0002.
var sqliteDialect = &dialect{
	name: "sqlite",
	open: openSQLite,
	// Aggregate ORDER BY: SQLite 3.44 and later.
	releasesOf: `(SELECT json_group_array(consumer ORDER BY seq)
		FROM claim_releases WHERE claim_id = claims.id AND claim_releases.namespace = claims.namespace)`,
	snapshotReads:       true,
	cacheStatements:     true,
	uninterruptedWrites: true,
	isUniqueViolation:   sqliteUniqueViolation,
	retryable:           func(error) bool { return false },
}

// postgresDialect: PostgreSQL through pgx's database/sql driver. Several
// store processes may share one database, so rows are locked explicitly
// and sweeps skip rows another process is working on.
var postgresDialect = &dialect{
	name:               "postgres",
	dollarPlaceholders: true,
	lockRow:            " FOR UPDATE",
	skipLocked:         " FOR UPDATE SKIP LOCKED",
	// Any constant works; it only has to be the same in every process.
	migrationLock:         "SELECT pg_advisory_xact_lock(7243018211)",
	open:                  openPostgres,
	deferredNamespaceKeys: true,
	dayPartitions:         true,
	writableCTEs:          true,
	namespaceRouting:      true,
	releasesOf: `(SELECT json_agg(consumer ORDER BY seq)::text
		FROM claim_releases WHERE claim_id = claims.id AND claim_releases.namespace = claims.namespace)`,
	isUniqueViolation: func(err error) bool { return pgCode(err) == "23505" },
	retryable: func(err error) bool {
		c := pgCode(err)
		return c == "40001" || c == "40P01" // serialization_failure, deadlock_detected
	},
}

// sqliteReaders is the size of the SQLite read pool. WAL readers never
// block the writer or each other, so a few connections let Claim, Blob and
// Namespace answer while a sweep page is being written.
const sqliteReaders = 4

// openSQLite opens a database file with two pools.
//
// SQLite allows one writer at a time. Instead of letting goroutines race
// for the write lock and fail with SQLITE_BUSY (a deferred transaction that
// starts reading and later wants to write cannot wait for the lock, it can
// only fail), all write transactions go through a pool of exactly one
// connection: database/sql queues them in Go, in order, and each one starts
// with BEGIN IMMEDIATE so that it holds the write lock from its first
// statement (that, and busy_timeout, is what keeps another process — the
// CLI running fsck against the same file — from failing us mid-transaction).
// Reads use a separate pool of query_only connections; in WAL mode they see
// the last committed state without waiting for the writer.
//
// Deadlock rule that follows from the one-connection pool: a method never
// uses a pool while it holds a transaction; everything inside a
// transaction goes through that transaction.
//
// ":memory:" is accepted for quick experiments: one connection serves both
// reads and writes, because each connection would otherwise see its own
// empty database.
func openSQLite(ctx context.Context, path string) (w, r *sql.DB, err error) {
	if path == "" {
		return nil, nil, errors.New("sqlite: empty database path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, nil, fmt.Errorf("sqlite: database path %q must not contain '?'", path)
	}
	common := "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	if path == ":memory:" {
		w, err = sql.Open("sqlite", path+"?"+common+"&_txlock=immediate")
		if err != nil {
			return nil, nil, err
		}
		w.SetMaxOpenConns(1)
		w.SetMaxIdleConns(1)
		w.SetConnMaxLifetime(0)
		w.SetConnMaxIdleTime(0)
		return w, w, nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
		}
	}
	// synchronous=NORMAL is durable across application crashes in WAL mode
	// and loses at most the last transactions on power loss; the sweeper
	// tolerates that (every step is idempotent), and it is several times
	// faster than FULL.
	wal := common + "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	// The writer gets a 32 MiB page cache (the default is 2 MiB): sweeper
	// pages touch claims, blobs and their indexes all over large tables
	// (claim ids are random). Measured on a 300,000-claim backlog: 5,900
	// → 8,250 claims finished per second.
	//
	// Two more settings for large write transactions such as a sweeper
	// page (ADR 0130): temp_store=MEMORY keeps the statement journal of
	// a multi-row UPDATE in memory (by default it spills to a temporary
	// file past 64 KiB, a write system call per page); and the WAL is
	// checkpointed every 10,000 pages (about 40 MiB) instead of 1,000, so
	// a page of the due index, the events table or the namespace row that
	// every transaction rewrites is copied into the database file once
	// per checkpoint instead of once per transaction, and the fsyncs of
	// checkpoints are ten times fewer. Together, on a 300,000-claim
	// backlog in random id order: 30% less CPU per finished claim.
	w, err = sql.Open("sqlite", path+"?"+wal+"&_pragma=cache_size(-32768)&_pragma=temp_store(MEMORY)&_pragma=wal_autocheckpoint(10000)&_txlock=immediate")
	if err != nil {
		return nil, nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// Create the file and switch it to WAL before the readers connect: a
	// query_only connection cannot change the journal mode.
	if err := w.PingContext(ctx); err != nil {
		_ = w.Close() // the ping's error is the one to report
		return nil, nil, err
	}
	r, err = sql.Open("sqlite", path+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		_ = w.Close() // the open's error is the one to report
		return nil, nil, err
	}
	r.SetMaxOpenConns(sqliteReaders)
	r.SetMaxIdleConns(sqliteReaders)
	return w, r, nil
}

func sqliteUniqueViolation(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// Pool defaults for PostgreSQL. Each replica holds at most
// pgMaxConns connections, so N replicas need N × pool_max_conns of the
// server's max_connections (100 by default).
const (
	pgMaxConns        = 16
	pgMaxConnLifetime = 30 * time.Minute
	pgMaxConnIdleTime = 5 * time.Minute
)

// pgPool is the pool configuration taken from a DSN's query.
type pgPool struct {
	maxConns             int
	maxLifetime, maxIdle time.Duration
}

// pgPoolParams takes the pool parameters out of a postgres:// URL (pgx
// would send unknown parameters to the server as settings, which fails):
//
//	pool_max_conns=16           open connections per process (idle ones kept too)
//	pool_max_conn_lifetime=30m  close connections older than this (rolling restarts of a proxy)
//	pool_max_conn_idle_time=5m  close connections idle this long
func pgPoolParams(dsn string) (string, pgPool, error) {
	p := pgPool{maxConns: pgMaxConns, maxLifetime: pgMaxConnLifetime, maxIdle: pgMaxConnIdleTime}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", p, fmt.Errorf("sqlmeta: %s: %w", redact(dsn), err)
	}
	q := u.Query()
	if v := q.Get("pool_max_conns"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", p, fmt.Errorf("sqlmeta: pool_max_conns %q: want a positive integer", v)
		}
		p.maxConns = n
	}
	for _, d := range []struct {
		name string
		into *time.Duration
	}{{"pool_max_conn_lifetime", &p.maxLifetime}, {"pool_max_conn_idle_time", &p.maxIdle}} {
		if v := q.Get(d.name); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x < 0 {
				return "", p, fmt.Errorf("sqlmeta: %s %q: want a duration like 30m (0: no limit)", d.name, v)
			}
			*d.into = x
		}
		q.Del(d.name)
	}
	q.Del("pool_max_conns")
	u.RawQuery = q.Encode()
	return u.String(), p, nil
}

// openPostgres opens one pool for both reads and writes: PostgreSQL has
// row locks, so writers do not need to be queued in Go.
func openPostgres(ctx context.Context, dsn string) (w, r *sql.DB, err error) {
	dsn, pool, err := pgPoolParams(dsn)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlmeta: %s: %w", redact(dsn), err)
	}
	dropReadOnly(cfg)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(pool.maxConns)
	db.SetMaxIdleConns(pool.maxConns)
	db.SetConnMaxLifetime(pool.maxLifetime)
	db.SetConnMaxIdleTime(pool.maxIdle)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close() // the ping's error is the one to report
		return nil, nil, err
	}
	return db, db, nil
}

// dropReadOnly makes a connection close itself when the server refuses
// a write as read-only, so that the pool dials again rather than keeping
// it. A multi-host URL with target_session_attrs=read-write (how
// claimcheck follows a failover, ADR 0288) checks the server only when a
// connection is made: a connection made to the primary stays open to the
// same server when that server becomes a standby without a restart, and
// a pool would keep handing it out, every write refused, until its
// lifetime ran out. Closed, it is dropped by the pool (database/sql asks
// the driver whether a connection is still good before reusing it), and
// the refused write reports unavailable (503, retry) like any other
// metadata error (meta.PublicError); the retry dials the new primary.
func dropReadOnly(cfg *pgx.ConnConfig) {
	fatalCloses := cfg.OnPgError // pgx's own: a FATAL error closes
	cfg.OnPgError = func(c *pgconn.PgConn, e *pgconn.PgError) bool {
		if e.Code == errReadOnly {
			return false
		}
		return fatalCloses == nil || fatalCloses(c, e)
	}
}

// errReadOnly is PostgreSQL's read_only_sql_transaction: a write sent
// to a server that is (or has just become) a standby.
const errReadOnly = "25006"

func pgCode(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// parseDSN picks the dialect from the DSN's scheme and returns what its
// open function takes.
func parseDSN(dsn string) (*dialect, string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite://"):
		return sqliteDialect, strings.TrimPrefix(dsn, "sqlite://"), nil
	case strings.HasPrefix(dsn, "sqlite:"):
		return sqliteDialect, strings.TrimPrefix(dsn, "sqlite:"), nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return postgresDialect, dsn, nil
	}
	return nil, "", fmt.Errorf("sqlmeta: unsupported database %q: use sqlite:PATH, sqlite://PATH or a postgres:// URL", redact(dsn))
}

// redact drops anything that could be a password from a DSN shown in an
// error.
func redact(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		return dsn[:i+3] + "..."
	}
	if len(dsn) > 16 {
		return dsn[:16] + "..."
	}
	return dsn
}
