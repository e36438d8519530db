package sqlmeta

import (
	"context"
	"database/sql"
	"sync"
)

// Prepared statements on SQLite.
//
// The pure-Go SQLite driver compiles every statement it is handed; a put's
// commit runs a dozen statements, and compiling them was about a fifth of
// the engine's CPU time on a 1 MiB put + redeem (docs/PERFORMANCE.md).
// database/sql keeps a statement prepared per connection when it is
// prepared on the *sql.DB, and a transaction reuses it with Tx.StmtContext.
// But DB.PrepareContext needs a free connection, and the SQLite writer has
// exactly one: preparing from inside a write transaction would wait for
// the transaction itself, for ever.
//
// So the cache never prepares on the caller's path. A statement seen for
// the second time is queued, and one goroutine prepares it on the *sql.DB
// when a connection is free; from then on transactions run it prepared.
// Texts seen once (an IN list of an unusual length) are not prepared, and
// the number of statements is bounded. PostgreSQL needs none of this: pgx
// caches prepared statements per connection by itself.

// maxStatements bounds the statements a cache prepares (per pool; each is
// prepared once on every connection that runs it).
const maxStatements = 256

// maxSeen bounds the texts remembered as seen once; the set starts over
// when it is full.
const maxSeen = 4096

// stmtCache prepares the statements a pool runs repeatedly.
type stmtCache struct {
	db *sql.DB

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt // prepared, by rebound SQL text
	seen   map[string]bool      // seen once, not yet queued
	queued map[string]bool      // waiting for the preparer
	closed bool

	todo chan string
	done chan struct{}
}

func newStmtCache(db *sql.DB) *stmtCache {
	c := &stmtCache{
		db:     db,
		stmts:  make(map[string]*sql.Stmt),
		seen:   make(map[string]bool),
		queued: make(map[string]bool),
		todo:   make(chan string, 64),
		done:   make(chan struct{}),
	}
	go c.prepare()
	return c
}

// lookup returns the prepared statement of text, or nil when it is not
// prepared (yet). It never blocks on the database.
func (c *stmtCache) lookup(text string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.stmts[text]; st != nil {
		return st
	}
	if c.closed || c.queued[text] || len(c.stmts)+len(c.queued) >= maxStatements {
		return nil
	}
	if !c.seen[text] {
		if len(c.seen) >= maxSeen {
			clear(c.seen)
		}
		c.seen[text] = true
		return nil
	}
	select {
	case c.todo <- text:
		delete(c.seen, text)
		c.queued[text] = true
	default: // the preparer is busy; a later sighting queues it
	}
	return nil
}

// prepare is the preparer goroutine.
func (c *stmtCache) prepare() {
	defer close(c.done)
	for text := range c.todo {
		// Waits for a free connection; never called inside a transaction.
		st, err := c.db.PrepareContext(context.Background(), text)
		c.mu.Lock()
		delete(c.queued, text)
		if err == nil && !c.closed {
			c.stmts[text], st = st, nil
		}
		c.mu.Unlock()
		if st != nil {
			st.Close()
		}
	}
}

// close stops the preparer and closes the statements; call it before
// closing the pool.
func (c *stmtCache) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.todo)
	c.mu.Unlock()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	for text, st := range c.stmts {
		st.Close()
		delete(c.stmts, text)
	}
}
