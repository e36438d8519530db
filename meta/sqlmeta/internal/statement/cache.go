package statement

import (
	"context"
	"database/sql"
	"sync"
)

// maxStatements bounds the statements a cache prepares (per pool; each is
// prepared once on every connection that runs it).
const maxStatements = 256

// maxSeen bounds the texts remembered as seen once; the set starts over
// when it is full.
const maxSeen = 4096

// Cache prepares the statements a pool runs repeatedly, never on the
// caller's path (doc.go). Create it with NewCache.
type Cache struct {
	db *sql.DB

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt // prepared, by rebound SQL text
	seen   map[string]bool      // seen once, not yet queued
	queued map[string]bool      // waiting for the preparer
	closed bool

	todo chan string
	done chan struct{}
}

// NewCache starts the cache of pool db and its preparer goroutine; Close
// stops it.
func NewCache(db *sql.DB) *Cache {
	c := &Cache{
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

// Lookup returns the prepared statement of text, or nil when it is not
// prepared (yet). It never blocks on the database. A transaction runs the
// statement it returns through Tx.StmtContext.
func (c *Cache) Lookup(text string) *sql.Stmt {
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
func (c *Cache) prepare() {
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
			// Not kept (closed cache): a failed Close leaves only a
			// statement the server frees with its connection.
			_ = st.Close()
		}
	}
}

// Close stops the preparer and closes the statements; call it before
// closing the pool. It is idempotent.
func (c *Cache) Close() {
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
		// The pool is closed next, which frees what a failed Close left.
		_ = st.Close()
		delete(c.stmts, text)
	}
}

// Prepared reports whether text is prepared, without counting a
// sighting as Lookup does.
func (c *Cache) Prepared(text string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[text] != nil
}
