// Package sqlmeta is the SQL implementation of meta.Store: one set of
// queries over database/sql, run on SQLite (modernc.org/sqlite, the
// embedded default) or PostgreSQL (pgx, for several server replicas).
//
// The queries are written once, in the subset both databases share, with ?
// placeholders. What differs — placeholder syntax, row locking, how the
// connection pool is set up — lives in the dialect struct (dialect.go).
// The schema is in migrations/, applied at Open.
//
// Every method that writes is one transaction; so is a read on SQLite,
// while on PostgreSQL a read runs its statements on one connection
// without BEGIN and COMMIT (Store.read). State changes are compare-and-swap
// (UPDATE ... WHERE id = ? AND state = ?, then the row count is checked),
// every timestamp comes from the caller's now, and sweeps read due rows
// from partial indexes on the due-time columns, a page at a time.
//
// Concurrency: on SQLite all writes are queued on one connection (see
// openSQLite), so two transactions never interleave. On PostgreSQL, under
// READ COMMITTED, rows a transaction is going to change are locked first
// (SELECT ... FOR UPDATE) and every decision that depends on other rows is
// taken after the lock, in a later statement, so it sees everything
// committed before. The blob row is the lock that serialises dedup against
// finishing and collection: Commit locks the blob it reuses, FinishClaim
// locks the blob before asking whether a live claim still points at it,
// and BeginCollect holds the blob (SKIP LOCKED) while it re-checks.
// Locks are taken in one order — claim, blobs (sorted by id), namespace,
// tenant — so that transactions wait for each other instead of
// deadlocking. The namespace row carries the quota counters, so on
// PostgreSQL the writes that change them (create, commit, finish) are
// serialised per namespace; that is the price of exact counters checked
// in the same transaction. It is also why the namespace comes last: a
// transaction holds it from its last statement to its commit, and a put
// creates its pending claim in one statement without BEGIN and COMMIT
// (Store.once), so the namespace's other puts wait for as few round
// trips as possible (ADR 0145).
package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta/internal/statement"
)

var _ meta.Store = (*Store)(nil)

// Store is a meta.Store on a SQL database. Create it with Open.
type Store struct {
	d *dialect
	w *sql.DB // write transactions
	r *sql.DB // read transactions (the same pool on PostgreSQL)

	// Statement caches of the two pools (internal/statement); nil where
	// the driver caches by itself.
	wc, rc *statement.Cache

	// Concurrent CreatePending, Commit and ClaimWithBlob calls share
	// statements (PostgreSQL, internal/statement, grouped_*.go).
	pendingGroups statement.Groups[*pendingReq]
	commitGroups  statement.Groups[*commitReq]
	readGroups    statement.Groups[*readReq]
	// And so do PutInlineObject calls (grouped_inline.go).
	inlineGroups statement.Groups[*inlineReq]
}

// Open connects to the database named by dsn and applies pending
// migrations. Accepted forms:
//
//	sqlite:PATH          a database file (parent directories are created)
//	sqlite://PATH        the same; sqlite:///abs/file.db is an absolute path
//	sqlite::memory:      a private in-memory database (tests, experiments)
//	postgres://...       PostgreSQL, any DSN pgx accepts (also postgresql://)
func Open(ctx context.Context, dsn string) (*Store, error) {
	return open(ctx, dsn, 0)
}

// open is Open that applies the migrations up to through only (0: all),
// for tests of a migration on the data of the schema before it.
func open(ctx context.Context, dsn string, through int64) (*Store, error) {
	d, target, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	w, r, err := d.open(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: open %s database: %w", d.name, err)
	}
	s := &Store{d: d, w: w, r: r}
	if d.cacheStatements {
		s.wc = statement.NewCache(w)
		s.rc = s.wc // ":memory:" has one pool for both
		if r != w {
			s.rc = statement.NewCache(r)
		}
	}
	if err := s.migrate(ctx, through); err != nil {
		_ = s.Close() // the migration's error is the one to report
		return nil, err
	}
	if err := s.ensureEventDaysAhead(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlmeta: create the events partitions ahead: %w", err)
	}
	return s, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlmeta: ping: %w", err)
	}
	if s.r != s.w {
		if err := s.r.PingContext(ctx); err != nil {
			return fmt.Errorf("sqlmeta: ping: %w", err)
		}
	}
	return nil
}

// Close closes the connection pools.
func (s *Store) Close() error {
	for _, c := range []*statement.Cache{s.wc, s.rc} {
		if c != nil {
			c.Close()
		}
	}
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// maxAttempts bounds how often a transaction is run again after a
// retryable failure (PostgreSQL serialisation failures and deadlocks, and
// the unique-index race of two concurrent commits of the same digest).
const maxAttempts = 10

// errRetry asks write to run the transaction again from the start.
var errRetry = errors.New("sqlmeta: transaction must be retried")

// write runs fn in a write transaction and commits it, running it again
// when it fails in a way that a fresh attempt can fix. fn must only
// assign its results, so that a repeated run starts clean.
//
// A transaction whose namespace must draw on its tenant's quota
// (needTenantLock, tenants.go) is run again with the tenant's row locked
// before anything else, so that the lock is always taken first.
func (s *Store) write(ctx context.Context, fn func(q *txq) error) error {
	var (
		err        error
		lockTenant string
	)
	for range maxAttempts {
		run := fn
		if tenant := lockTenant; tenant != "" {
			run = func(q *txq) error {
				if err := q.lockTenant(tenant); err != nil {
					return err
				}
				q.tenantLocked = tenant
				return fn(q)
			}
		}
		err = s.runTx(ctx, s.w, s.wc, nil, run)
		var need *needTenantLock
		if errors.As(err, &need) && lockTenant == "" {
			lockTenant = need.tenant
			continue
		}
		if err == nil || ctx.Err() != nil || !(errors.Is(err, errRetry) || s.d.retryable(err)) {
			return err
		}
	}
	return err
}

// once runs fn, whose writes are one statement, without BEGIN and
// COMMIT, on the write pool. PostgreSQL runs a statement outside a
// transaction block as a transaction of its own: it commits as the
// statement ends (deferred constraints checked then), or not at all, and
// the row locks it took are released then. Two round trips fewer than
// write, and no lock held across a round trip. Only for dialects with
// writable WITH clauses (PostgreSQL), where one statement can carry a
// whole state change.
func (s *Store) once(ctx context.Context, fn func(q *txq) error) error {
	var err error
	for range maxAttempts {
		err = fn(&txq{ctx: ctx, db: s.w, d: s.d})
		if err == nil || ctx.Err() != nil || !(errors.Is(err, errRetry) || s.d.retryable(err)) {
			return err
		}
	}
	return err
}

// read runs fn in a read-only transaction where one gives multi-query
// reads one snapshot (SQLite). On PostgreSQL, under READ COMMITTED, every
// statement takes its own snapshot inside a transaction too, so there fn
// runs on one connection without one: BEGIN and COMMIT would only add two
// round trips to every read.
func (s *Store) read(ctx context.Context, fn func(q *txq) error) error {
	if s.d.snapshotReads {
		return s.runTx(ctx, s.r, s.rc, &sql.TxOptions{ReadOnly: true}, fn)
	}
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }() // back to the pool, after a read
	return fn(&txq{ctx: ctx, db: conn, d: s.d})
}

// readOne is where a read of one statement runs without a transaction:
// the read pool itself, with its prepared statements. One statement
// reads one snapshot on every dialect, so on SQLite this saves the BEGIN
// and COMMIT that read puts around a multi-statement read.
func (s *Store) readOne(ctx context.Context) *txq {
	return &txq{ctx: ctx, db: s.r, d: s.d, stmts: s.rc}
}

// beginner is what a transaction starts on: a pool, or one connection of
// it (shred.go).
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

func (s *Store) runTx(ctx context.Context, db beginner, stmts *statement.Cache, opts *sql.TxOptions, fn func(q *txq) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	// Where the writer's statements cannot wait (dialect), they run
	// without ctx's cancellation: modernc's driver starts a goroutine per
	// statement to interrupt it when ctx is done, five of them for a
	// digest-first hit. A cancellation still ends the transaction, only
	// between statements instead of inside one: database/sql rolls the
	// transaction back when ctx is done (BeginTx above), the statement
	// after fails with sql.ErrTxDone and nothing is committed. BEGIN, the
	// one step that waits (for the write lock, up to busy_timeout), still
	// honours ctx, and so does work inside that is not a statement
	// (txq.callerCtx: the digest-first hit's check of its object).
	stmtCtx := ctx
	if s.d.uninterruptedWrites && (opts == nil || !opts.ReadOnly) {
		stmtCtx = context.WithoutCancel(ctx)
	}
	if err := fn(&txq{ctx: stmtCtx, caller: ctx, db: tx, tx: tx, d: s.d, stmts: stmts}); err != nil {
		_ = tx.Rollback()
		return txDoneCause(ctx, err)
	}
	return txDoneCause(ctx, tx.Commit())
}

// txDoneCause reports a transaction that ctx's cancellation rolled back
// as ctx's error, as a statement run inside ctx would have (callers tell
// a client gone from a database failing by it), rather than as the
// sql.ErrTxDone of the statement or commit that came after.
func txDoneCause(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, sql.ErrTxDone) {
		return ctxErr
	}
	return err
}

// txq runs the dialect's rebound queries inside one transaction, or for
// a read on PostgreSQL on one connection (Store.read).
type txq struct {
	ctx context.Context
	// caller is the context the transaction was begun with, cancellation
	// and all, where ctx has had it dropped (runTx); nil when the same.
	// For work inside the transaction that is not a statement and can
	// wait, such as a storage call.
	caller context.Context
	db     querier
	tx     *sql.Tx // db as a transaction; nil for a read without one
	d      *dialect
	stmts  *statement.Cache // nil: every statement is compiled where it runs
	// tenantLocked is the tenant whose row the transaction locked first,
	// to draw on its quota (Store.write); "" for none.
	tenantLocked string
}

// callerCtx is the caller's context, with its cancellation (see txq).
func (q *txq) callerCtx() context.Context {
	if q.caller != nil {
		return q.caller
	}
	return q.ctx
}

// querier is what *sql.Tx and *sql.Conn have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// prepared returns the statement of query, bound to the transaction if
// there is one, when the pool's cache has it prepared, else nil and the
// rebound text.
func (q *txq) prepared(query string) (*sql.Stmt, string) {
	text := q.d.rebind(query)
	if q.d.observe != nil {
		q.d.observe(text)
	}
	if q.stmts == nil {
		return nil, text
	}
	st := q.stmts.Lookup(text)
	switch {
	case st == nil:
		return nil, text
	case q.tx != nil:
		return q.tx.StmtContext(q.ctx, st), text
	default: // q.db is the cache's own pool (readOne)
		return st, text
	}
}

func (q *txq) exec(query string, args ...any) (int64, error) {
	var (
		res sql.Result
		err error
	)
	if st, text := q.prepared(query); st != nil {
		res, err = st.ExecContext(q.ctx, args...)
	} else {
		res, err = q.db.ExecContext(q.ctx, text, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q *txq) query(query string, args ...any) (*sql.Rows, error) {
	st, text := q.prepared(query)
	if st != nil {
		return st.QueryContext(q.ctx, args...)
	}
	return q.db.QueryContext(q.ctx, text, args...)
}

func (q *txq) queryRow(query string, args ...any) *sql.Row {
	st, text := q.prepared(query)
	if st != nil {
		return st.QueryRowContext(q.ctx, args...)
	}
	return q.db.QueryRowContext(q.ctx, text, args...)
}

// execReturningIDs runs an UPDATE ... RETURNING id (SQLite 3.35+ and
// PostgreSQL) and adds the returned ids to into.
func (q *txq) execReturningIDs(into map[string]bool, query string, args ...any) error {
	rows, err := q.query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		into[id] = true
	}
	return rows.Err()
}

// placeholders returns "?, ?, ..." with n marks, for IN lists.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// inChunk bounds IN lists well below every database's parameter limit
// (SQLite 32766, PostgreSQL 65535).
const inChunk = 500

// chunks calls fn for consecutive slices of ids of at most inChunk ids.
func chunks(ids []string, fn func(part []string) error) error {
	for len(ids) > 0 {
		n := min(len(ids), inChunk)
		if err := fn(ids[:n]); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

func anys(ids []string) []any {
	a := make([]any, len(ids))
	for i, id := range ids {
		a[i] = id
	}
	return a
}

// Times are stored as Unix nanoseconds (BIGINT), NULL for the zero time.
// That covers the years 1678 to 2262.

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromTS(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
