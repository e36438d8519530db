package sqlmeta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/claimcheck/claimcheck/meta"
)

// Read receipts by namespace (ADR 0264).
//
// A batch of receipts holds reads of many namespaces (engine/reads.go
// writes whatever queued up). On PostgreSQL every statement RecordReads
// sends names one namespace: the batch is split into groups of one
// namespace each (readGroups), and a group's claims are found by
// namespace and id, so that on a PostgreSQL distributed by namespace each
// statement goes to the one shard holding them. Reads that name no
// namespace form a group of their own, found by id alone. Each group is
// written by itself: one statement (recordReadsOnce), or, when that gives
// way, one transaction.
//   - A transaction that locked one namespace's claims in id order and
//     then another's would not lock in id order, the order of every
//     writer that locks many claims (the sweeper's page locks claims of
//     many namespaces), so it could deadlock with them; one namespace per
//     transaction keeps the order. On a distributed PostgreSQL it is also
//     a transaction on one node, where one over the batch would commit on
//     many in two phases.
//   - A group that fails does not hold up the others; RecordReads then
//     fails with *meta.UnrecordedReadsError naming the reads it did not
//     write, so that a retry counts none twice.
//
// SQLite, never distributed, writes the whole batch in one transaction
// and finds its claims by id, as before: its one writer serialises every
// write and takes no row locks, and statements per namespace would only
// add statements. A read's namespace is checked there against its
// claim's as loaded, with the same answer: a claim not in the namespace
// the read names is not found.

// readGroup is the reads of one namespace in a batch: indexes into the
// batch, in batch order. ns "" finds the claims by id alone.
type readGroup struct {
	ns  string
	idx []int
}

// namedReads returns reads with the namespace the context names
// (meta.WithNamespace), if any, filled into the reads that name none.
func namedReads(ctx context.Context, reads []meta.Read) []meta.Read {
	hint := meta.NamespaceFrom(ctx)
	if hint == "" {
		return reads
	}
	reads = slices.Clone(reads)
	for i := range reads {
		if reads[i].Namespace == "" {
			reads[i].Namespace = hint
		}
	}
	return reads
}

// readGroups splits reads by namespace, in the order each namespace
// first appears.
func readGroups(reads []meta.Read) []readGroup {
	var groups []readGroup
	at := map[string]int{}
	for i, r := range reads {
		g, ok := at[r.Namespace]
		if !ok {
			g = len(groups)
			at[r.Namespace] = g
			groups = append(groups, readGroup{ns: r.Namespace})
		}
		groups[g].idx = append(groups[g].idx, i)
	}
	return groups
}

// RecordReads records served reads; see meta.Store and the comment at
// the top of this file. A group's claims are loaded (and locked, in id
// order) by one statement and written by one: a batch costs the same few
// round trips per namespace however many reads it carries.
func (s *Store) RecordReads(ctx context.Context, reads []meta.Read) ([]string, error) {
	if len(reads) == 0 {
		return nil, nil
	}
	reads = namedReads(ctx, reads)
	skip := make([]bool, len(reads)) // by read: its claim is not active (in its namespace)
	var err error
	if s.d.lockRow == "" {
		// No row locks (SQLite): the batch as one group found by id, in
		// one transaction.
		all := readGroup{idx: make([]int, len(reads))}
		for i := range all.idx {
			all.idx[i] = i
		}
		err = s.write(ctx, func(q *txq) error {
			clear(skip)
			events := make([][]meta.Event, len(reads))
			if err := q.recordReadGroup(reads, all, skip, events); err != nil {
				return err
			}
			return q.appendEvents(slices.Concat(events...))
		})
	} else {
		err = s.recordReadGroups(ctx, reads, readGroups(reads), skip)
	}
	var skipped []string
	for i, r := range reads {
		if skip[i] {
			skipped = append(skipped, r.ClaimID)
		}
	}
	if err != nil {
		return skipped, fmt.Errorf("sqlmeta: record %d reads: %w", len(reads), err)
	}
	return skipped, nil
}

// receiptGroupsInFlight is how many namespace groups of one batch of
// receipts are written at once, each on a pooled connection of its own.
const receiptGroupsInFlight = 4

// recordReadGroups writes each group by itself (databases with row
// locks): in one statement where the dialect has writable CTEs, else, or
// when the statement gives way, in a transaction. The reads of groups
// that failed come back in a *meta.UnrecordedReadsError.
func (s *Store) recordReadGroups(ctx context.Context, reads []meta.Read, groups []readGroup, skip []bool) error {
	// Event numbers over the whole batch, as appendEvents gives them: the
	// read's time, moved up past the previous one of the batch. Each read
	// keeps the number after its own for a first_redeemed event, used by
	// the first read of a claim whose count was zero. Numbered over the
	// batch, not per group, the groups' events do not collide.
	seqs := make([]int64, len(reads))
	var last int64
	for i, r := range reads {
		seqs[i] = max(r.At.UnixNano(), last+1)
		last = seqs[i] + 1
	}
	var (
		mu     sync.Mutex
		failed []int
		errs   []error
	)
	write := func(g readGroup) {
		err := s.recordReadGroup(ctx, reads, g, seqs, skip) // each group sets skip at its own reads only
		if err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, i := range g.idx {
			skip[i] = false // not recorded, and not known to be skipped
		}
		failed = append(failed, g.idx...)
		errs = append(errs, fmt.Errorf("namespace %q: %w", g.ns, err))
	}
	// The groups that name a namespace touch disjoint claims (a claim
	// is in one namespace) and commit apart, so they run side by side, a
	// few at a time: a batch of several namespaces takes about as long as
	// its slowest group, not their sum, and leaves the rest of the pool
	// to the requests. The group found by id alone may hold claims of
	// any of them: it runs after them.
	var byID []readGroup
	var wg sync.WaitGroup
	slots := make(chan struct{}, receiptGroupsInFlight)
	for _, g := range groups {
		switch {
		case g.ns == "":
			byID = append(byID, g)
		case len(groups) == 1:
			write(g)
		default:
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				write(g)
			})
		}
	}
	wg.Wait()
	for _, g := range byID {
		write(g)
	}
	if len(errs) == 0 {
		return nil
	}
	slices.Sort(failed) // batch order
	unrecorded := make([]meta.Read, len(failed))
	for j, i := range failed {
		unrecorded[j] = reads[i]
	}
	return &meta.UnrecordedReadsError{Reads: unrecorded, Err: errors.Join(errs...)}
}

// recordReadGroup writes one group by itself: one statement, or a
// transaction when the statement gives way (or the dialect has none).
func (s *Store) recordReadGroup(ctx context.Context, reads []meta.Read, g readGroup, seqs []int64, skip []bool) error {
	if s.d.writableCTEs && !auditOff.Load() {
		done, err := s.recordReadsOnce(ctx, reads, g, seqs, skip)
		if err != nil || done {
			return err
		}
	}
	return s.write(ctx, func(q *txq) error {
		events := make([][]meta.Event, len(reads))
		for _, i := range g.idx {
			skip[i] = false
		}
		if err := q.recordReadGroup(reads, g, skip, events); err != nil {
			return err
		}
		return q.appendEvents(slices.Concat(events...))
	})
}

// recordReadGroup records the reads of group g in q's transaction: it
// sets skip for each read whose claim is not active in the namespace the
// read names (found by the statement when the group names it, checked
// here when it does not), and events[i] to the events of read i.
func (q *txq) recordReadGroup(reads []meta.Read, g readGroup, skip []bool, events [][]meta.Event) error {
	in, nsArgs := "", []any(nil)
	if g.ns != "" {
		in, nsArgs = `namespace = ? AND `, []any{g.ns}
	}
	ids := make([]string, 0, len(g.idx))
	for _, i := range g.idx {
		if !slices.Contains(ids, reads[i].ClaimID) {
			ids = append(ids, reads[i].ClaimID)
		}
	}
	slices.Sort(ids)
	claims := make(map[string]*meta.Claim, len(ids))
	err := chunks(ids, func(part []string) error {
		cs, err := queryAll(q, scanClaim, `SELECT `+claimColumns+` FROM claims WHERE `+in+`id IN (`+placeholders(len(part))+`)
			AND state = 'active' ORDER BY id`+q.d.lockRow, append(slices.Clone(nsArgs), anys(part)...)...)
		for i := range cs {
			claims[cs[i].ID] = &cs[i]
		}
		return err
	})
	if err != nil {
		return err
	}
	var changed []string
	for _, i := range g.idx {
		r := reads[i]
		c := claims[r.ClaimID]
		if c == nil || (r.Namespace != "" && c.Namespace != r.Namespace) { // unknown (in its namespace), pending or finished
			skip[i] = true
			continue
		}
		first := c.Reads == 0
		c.Reads++
		if c.FirstReadAt.IsZero() || r.At.Before(c.FirstReadAt) {
			c.FirstReadAt = r.At
		}
		if r.At.After(c.LastReadAt) {
			c.LastReadAt = r.At
		}
		if c.DeleteAfterRead {
			c.DueAt, c.DueReason = lowerDue(*c, c.FirstReadAt.Add(c.RetentionAfterRead), meta.ReasonReadRetention)
		}
		if !slices.Contains(changed, c.ID) {
			changed = append(changed, c.ID)
		}
		events[i] = append(events[i], meta.Event{At: r.At, Kind: meta.EventRedeemed, Namespace: c.Namespace,
			ClaimID: c.ID, BlobID: c.BlobID, Actor: r.Actor})
		if first {
			// The read count leaves zero in this transaction: the
			// claim's first redeem, logged with the update that
			// records it (ADR 0240).
			events[i] = append(events[i], meta.Event{At: r.At, Kind: meta.EventFirstRedeemed, Namespace: c.Namespace,
				ClaimID: c.ID, BlobID: c.BlobID, Actor: r.Actor})
		}
	}
	// One UPDATE from a list of new values (CAST: a bare parameter in
	// VALUES has no type on PostgreSQL). The redeem events ride with the
	// batched receipts: no write on the redeem path (engine/reads.go).
	return chunks(changed, func(part []string) error {
		var args []any
		rows := make([]string, len(part))
		for i, id := range part {
			c := claims[id]
			rows[i] = `(?, CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), ?)`
			args = append(args, id, c.Reads, ts(c.FirstReadAt), ts(c.LastReadAt), ts(c.DueAt), c.DueReason)
		}
		where := ""
		if g.ns != "" {
			where, args = ` AND claims.namespace = ?`, append(args, g.ns)
		}
		_, err := q.exec(`WITH v (id, reads, first_read_at, last_read_at, due_at, due_reason) AS (VALUES `+strings.Join(rows, ", ")+`)
			UPDATE claims SET reads = v.reads, first_read_at = v.first_read_at, last_read_at = v.last_read_at,
				due_at = v.due_at, due_reason = v.due_reason
			FROM v WHERE claims.id = v.id AND claims.state = 'active'`+where, args...)
		return err
	})
}
