// Package statement holds the two pieces of machinery by which sqlmeta
// spends fewer statements than calls: statement groups (Groups, on
// PostgreSQL) and prepared statements (Cache, on SQLite). Neither knows
// any SQL of claimcheck's; sqlmeta's grouped_*.go files hold the
// statements they run.
//
// # Statement groups (PostgreSQL, ADR 0160)
//
// Every put of a namespace changes the namespace's counter row (its
// usage and quota), so concurrent puts of one namespace run their
// statements one after another however many connections there are, and
// each pays a statement's whole fixed cost (bind, executor start,
// commit, a round trip) for one row of each table. Groups turns that
// queue into work saved: calls that would each run one statement on the
// same hot row run one statement together when they come while another
// of theirs runs.
//
// A call whose key has no statement running runs its own at once. A call
// that comes while one runs waits in the key's queue; when the running
// statement ends, the first waiter takes the queue (GroupMax calls at
// most), runs them as one statement, and hands over to the next first
// waiter in turn. So a call waits for at most the statement running when
// it came and its own group's. A waiting call does not give up with its
// context, since its rows may be in the statement running.
//
// sqlmeta groups three calls, each keyed by what its calls must share:
//
//   - CreatePending (grouped_createpending.go), keyed by namespace,
//     tenant and limits: every staging blob row, every pending claim
//     row, then one counter change by their sum;
//   - Commit (grouped_commit.go), keyed by tenant and byte limit: each
//     claim pending → active and its staging blob → committed, one
//     created event each, then one counter change per namespace by the
//     sums;
//   - ClaimWithBlob, the redeem's read (grouped_claimwithblob.go), in
//     four groups side by side so reads of different claims still use
//     the pool in parallel: every waiting claim and blob by id.
//
// A group's statement has one fixed text whatever the group's size: the
// calls' rows travel as arrays (unnest), not as one row of placeholders
// per call, so PostgreSQL parses and plans it once per connection, not
// once per group size (with a text per size, planning took a large share
// of PostgreSQL's time in statements).
//
// The quota is checked on the group's sum, in the WHERE of the counter
// change, as for one call, so a namespace never goes over its limit
// because its puts came together. A guard in a writing group's statement
// (a division by zero unless every row was written and every counter
// changed) fails it as a whole, and one statement outside a transaction
// block commits all of its rows or none, so nothing is reserved that no
// claim carries.
//
// A group only saves work; it decides nothing. When the group's
// statement does not do every call's work — the sum does not fit the
// quota, a put has a blob to share (dedup), a swap was lost, an event
// number was taken, a claim was not found, or any error — each call runs
// its own statement, as it would have alone, and gets its own answer
// (for Commit, the single statement below, which leaves what it cannot
// decide to the transaction).
//
// Two calls have a single statement on PostgreSQL, in sqlmeta: Commit
// (onestatement_commit.go, ADR 0145) and RecordReads, a batch of the
// engine's read receipts, one statement per namespace of the batch
// (onestatement_recordreads.go, ADRs 0160 and 0264), each run as one
// statement outside a transaction block, guarded the same way, and fall
// back to the transaction when the guard fails; the read receipts travel
// as arrays, so their text too is the same for every batch size.
//
// # Prepared statements (SQLite)
//
// The pure-Go SQLite driver compiles every statement it is handed; a
// put's commit runs a dozen statements, and compiling them was about a
// fifth of the engine's CPU time on a 1 MiB put + redeem. database/sql
// keeps a statement prepared per connection when it is prepared on the
// *sql.DB, and a transaction reuses it with Tx.StmtContext. But
// DB.PrepareContext needs a free connection, and the SQLite writer has
// exactly one: preparing from inside a write transaction would wait for
// the transaction itself, for ever.
//
// So Cache never prepares on the caller's path. A statement seen for the
// second time is queued, and one goroutine prepares it on the *sql.DB
// when a connection is free; from then on transactions run it prepared.
// Texts seen once (an IN list of an unusual length) are not prepared, and
// the number of statements is bounded. PostgreSQL needs none of this: pgx
// caches prepared statements per connection by itself.
package statement
