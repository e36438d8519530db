package sqlmeta

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/claimcheck/claimcheck/meta"
)

// Group commit of CreatePending (PostgreSQL, ADR 0160).
//
// Every put of a namespace changes the namespace's counter row in its
// CreatePending statement, so concurrent puts of one namespace run those
// statements one after another however many connections there are, and
// each pays a statement's whole fixed cost (bind, executor start, commit,
// a round trip) for one row of each table. Puts that arrive while a
// CreatePending of their namespace is running queue instead, and the next
// of them writes all the queued ones in one statement: every staging blob
// row, every pending claim row, and one counter change by their sum. The
// quota is checked on that sum in the counter change's WHERE, as for one
// put, so the namespace never goes over its limit; the statement commits
// all the rows or none (it is one statement outside a transaction
// block), so nothing is reserved that no claim row carries. When the
// statement changes nothing (the sum does not fit, a put's digest has a
// blob to share) or fails for any reason, each put of the group runs its
// own statement, as without the group, and gets its own answer: a group
// only ever saves work, it decides nothing.

// pendingGroupMax bounds the puts written by one statement (25
// parameters each, far below PostgreSQL's 65,535).
const pendingGroupMax = 64

// pendingReq is one put waiting in a group.
type pendingReq struct {
	ctx        context.Context
	p          meta.CreatePendingParams
	blobValues string
	blobArgs   []any
	claimArgs  []any
	single     func(context.Context) error // the put's own statement
	err        error
	wake       chan bool // true: lead the next group; false: err is the answer
}

// pendingKey is what the puts of one statement share: the namespace row
// and the limits checked on it.
type pendingKey struct {
	namespace, tenant       string
	quotaBytes, quotaClaims int64
}

// pendingGroups queues the CreatePending calls of each namespace behind
// the one running.
type pendingGroups struct {
	mu      sync.Mutex
	running map[pendingKey][]*pendingReq // key present: a statement runs; the slice is who waits
}

// createPendingGrouped runs r alone when no CreatePending of its
// namespace is running, else queues it; the first of the queue writes
// the queue (pendingGroupMax at most) in one statement when the running
// one ends, and hands over to the next first in turn. So each put waits
// for at most the statement running when it came and its own group's.
func (s *Store) createPendingGrouped(r *pendingReq) error {
	key := pendingKey{r.p.Claim.Namespace, r.p.Tenant.Tenant, r.p.QuotaBytes, r.p.QuotaClaims}
	g := &s.groups
	g.mu.Lock()
	if g.running == nil {
		g.running = map[pendingKey][]*pendingReq{}
	}
	if queue, busy := g.running[key]; busy {
		// The wait does not end with r.ctx: a group may be writing r's
		// rows already, and its answer is r's.
		r.wake = make(chan bool, 1)
		g.running[key] = append(queue, r)
		g.mu.Unlock()
		if lead := <-r.wake; !lead {
			return r.err
		}
		g.mu.Lock()
		queue = g.running[key] // r is its first
		n := min(len(queue), pendingGroupMax)
		batch := slices.Clone(queue[:n])
		g.running[key] = queue[n:]
		g.mu.Unlock()
		s.runPendingGroup(batch)
		s.handOverPending(key)
		return r.err
	}
	g.running[key] = nil
	g.mu.Unlock()
	r.err = r.single(r.ctx)
	s.handOverPending(key)
	return r.err
}

// handOverPending ends a statement of key: the first waiter, if any,
// leads the next group; else the namespace is free.
func (s *Store) handOverPending(key pendingKey) {
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	queue := g.running[key]
	if len(queue) == 0 {
		delete(g.running, key)
		return
	}
	queue[0].wake <- true
}

// runPendingGroup writes batch (led by its first) in one statement, or
// each put on its own when the statement changed nothing or failed, and
// answers every put of it but the first, which is the caller's.
func (s *Store) runPendingGroup(batch []*pendingReq) {
	if len(batch) == 1 || s.pendingGroupOnce(batch) != nil {
		for _, r := range batch {
			r.err = r.single(r.ctx)
		}
	}
	for _, r := range batch[1:] {
		r.wake <- false
	}
}

// pendingGroupOnce is the group's statement: the rows of every put, then
// one counter change by their sum, made only if the quota admits the sum
// and no put has a blob to share; a guard fails the statement (and takes
// the rows back out) when it was not made. It runs on the first put's
// context; an error sends every put to its own statement.
func (s *Store) pendingGroupOnce(batch []*pendingReq) error {
	first := batch[0].p
	var (
		blobRows, claimRows []string
		args                []any
		claimArgs           []any
		reserved            int64
		only                = []string{`(SELECT count(*) FROM b) = ?`, `(SELECT count(*) FROM c) = ?`}
		onlyArgs            = []any{len(batch), len(batch)}
	)
	for _, r := range batch {
		blobRows = append(blobRows, `(`+r.blobValues+`)`)
		args = append(args, r.blobArgs...)
		claimRows = append(claimRows, `(`+claimValues+`)`)
		claimArgs = append(claimArgs, r.claimArgs...)
		reserved += r.p.Claim.ReservedBytes
		if r.p.UnlessDigest != "" {
			only = append(only, `NOT EXISTS (SELECT 1 FROM blobs WHERE `+candidateOf+`)`)
			onlyArgs = append(onlyArgs, r.p.Claim.Namespace, r.p.UnlessDigest)
		}
	}
	args = append(args, claimArgs...)
	var (
		where     []string
		whereArgs []any
	)
	if first.QuotaBytes > 0 {
		where = append(where, `namespaces.used_bytes + namespaces.reserved_bytes + excluded.reserved_bytes <= ?`)
		whereArgs = append(whereArgs, first.QuotaBytes)
	}
	if first.QuotaClaims > 0 {
		where = append(where, `namespaces.active_claims + namespaces.pending_claims + excluded.pending_claims <= ?`)
		whereArgs = append(whereArgs, first.QuotaClaims)
	}
	delta := nsDelta{reserved: reserved, pending: int64(len(batch))}
	count, countArgs := nsChange(first.Claim.Namespace, delta, first.Tenant.Tenant,
		strings.Join(only, ` AND `), onlyArgs, strings.Join(where, ` AND `), whereArgs...)
	query := `WITH b AS (` + blobInsertColumns + `VALUES ` + strings.Join(blobRows, ", ") + ` RETURNING id),
		c AS (INSERT INTO claims (` + claimColumns + `) VALUES ` + strings.Join(claimRows, ", ") + ` RETURNING id),
		n AS (` + count + `)
		SELECT 1 / (SELECT count(*) FROM n)`
	args = append(args, countArgs...)
	err := s.once(batch[0].ctx, func(q *txq) error {
		var made int
		return q.queryRow(query, args...).Scan(&made)
	})
	if err != nil {
		return fmt.Errorf("sqlmeta: create %d pending claims in one statement: %w", len(batch), err)
	}
	return nil
}
