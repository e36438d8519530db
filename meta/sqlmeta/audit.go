package sqlmeta

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Events log writes.
//
// Sequence numbers: seq is the event's time in Unix nanoseconds, moved up
// past the previous event of the same batch, and on a collision with a row
// already there past the largest seq in the table. The first version took
// MAX(seq)+1 in every appending transaction; on PostgreSQL two concurrent
// transactions then pick the same number, and the second one waits for the
// first to commit, fails on the primary key and runs again from the start.
// With lifecycle events written by every put, finish and read batch, that
// serialised all writers behind each other and turned busy moments into
// retry storms. Time-derived numbers only collide when two transactions
// log the same nanosecond (in practice: tests on a fake clock), and a
// collision is resolved inside the transaction (ON CONFLICT DO NOTHING,
// then new numbers for the rows that were not inserted), never by
// restarting it. The log stays ordered by time, which is what an audit
// trail is read by; rows older than the change keep their small numbers.

// eventChunk bounds the rows of one multi-row INSERT (10 parameters each,
// 5,000 in all, well below both databases' limits): a sweeper page of 250
// finished claims logs its events in one statement, one round trip on
// PostgreSQL, not three (ADR 0130).
const eventChunk = 500

// seqWindow is how far past its own time a colliding event's number may
// move and still count as in order: a millisecond.
const seqWindow = int64(time.Millisecond)

// maxEventRetries bounds the renumbering rounds after collisions.
const maxEventRetries = 20

// auditOff skips lifecycle events. Only the side-by-side benchmark of
// the audit trail's cost sets it (audit_bench_test.go); the trail is
// always on otherwise (ADR 0070).
var auditOff atomic.Bool

// appendEvents inserts events in the caller's transaction and fills in
// their Seq.
func (q *txq) appendEvents(events []meta.Event) error {
	if len(events) == 0 || auditOff.Load() {
		return nil
	}
	var last int64
	for i := range events {
		seq := events[i].At.UnixNano()
		if seq <= last {
			seq = last + 1
		}
		events[i].Seq, last = seq, seq
	}
	todo := make([]*meta.Event, len(events))
	for i := range events {
		todo[i] = &events[i]
	}
	for range maxEventRetries {
		var missed []*meta.Event
		for len(todo) > 0 {
			n := min(len(todo), eventChunk)
			m, err := q.insertEvents(todo[:n])
			if err != nil {
				return err
			}
			missed = append(missed, m...)
			todo = todo[n:]
		}
		if len(missed) == 0 {
			return nil
		}
		if len(events) > 1 {
			// The events of one change are in order (a release, then
			// all_released; expired, then expired_unread) and a reader
			// delivers them in seq order (ADR 0240): renumbering only
			// the missed rows could put a later one first. So the rows
			// that went in are taken back and the whole batch is
			// numbered again, in order, past the collision.
			if err := q.retractEvents(events, missed); err != nil {
				return err
			}
			first := events[0].Seq
			top, err := q.topSeq(events, first, first+seqWindow)
			if err != nil {
				return err
			}
			next := max(top+1, first+1)
			if next+int64(len(events)) >= first+seqWindow {
				if top, err = q.topSeq(events, 0, 0); err != nil {
					return err
				}
				next = top + 1
			}
			todo = todo[:0]
			for i := range events {
				events[i].Seq = next + int64(i)
				todo = append(todo, &events[i])
			}
			continue
		}
		// Collisions: move each missed row just past the events already
		// logged within a millisecond of its number, so it stays in time
		// order; past everything when that window is full.
		var prev int64
		for _, e := range missed {
			one := []meta.Event{*e}
			top, err := q.topSeq(one, e.Seq, e.Seq+seqWindow)
			if err != nil {
				return err
			}
			next := max(top+1, e.Seq+1, prev+1)
			if next >= e.Seq+seqWindow {
				if top, err = q.topSeq(one, 0, 0); err != nil {
					return err
				}
				next = max(top+1, prev+1)
			}
			e.Seq, prev = next, next
		}
		todo = missed
	}
	return fmt.Errorf("events: sequence numbers kept colliding after %d rounds: %w", maxEventRetries, errRetry)
}

// topSeq is the highest seq in [from, to) (to 0: anywhere) that could
// collide with one of events. On PostgreSQL a seq is unique within its
// namespace (the key is (namespace, seq), events_days.go), so only the
// events' own namespaces are read: the statement names one namespace, as
// every statement of a put, release and finish does (ADR 0264). SQLite
// keys events by seq alone and reads them all.
func (q *txq) topSeq(events []meta.Event, from, to int64) (int64, error) {
	where, args := ``, []any{}
	if to > 0 {
		where, args = ` AND seq >= ? AND seq < ?`, []any{from, to}
	}
	if !q.d.dayPartitions {
		var top sql.NullInt64
		err := q.queryRow(`SELECT MAX(seq) FROM events WHERE 1 = 1`+where, args...).Scan(&top)
		return top.Int64, err
	}
	var highest int64
	for i, e := range events {
		if slices.ContainsFunc(events[:i], func(d meta.Event) bool { return d.Namespace == e.Namespace }) {
			continue
		}
		var top sql.NullInt64
		if err := q.queryRow(`SELECT MAX(seq) FROM events WHERE namespace = ?`+where,
			append([]any{e.Namespace}, args...)...).Scan(&top); err != nil {
			return 0, err
		}
		highest = max(highest, top.Int64)
	}
	return highest, nil
}

// retractEvents deletes the rows of events this transaction inserted:
// all but the missed ones.
func (q *txq) retractEvents(events []meta.Event, missed []*meta.Event) error {
	skip := make(map[int64]bool, len(missed))
	for _, e := range missed {
		skip[e.Seq] = true
	}
	var keys []any
	for i := range events {
		if !skip[events[i].Seq] {
			keys = append(keys, events[i].Namespace, events[i].Seq)
		}
	}
	return q.deleteEventKeys(keys)
}

// insertEvents inserts one chunk and returns the events whose seq was
// taken already.
func (q *txq) insertEvents(es []*meta.Event) ([]*meta.Event, error) {
	if len(es) == 1 {
		// One event, the common case (every put logs one): whether it
		// went in is the count of rows inserted, which needs no result
		// rows (database/sql starts a goroutine for every result set
		// read inside a transaction).
		e := es[0]
		n, err := q.exec(`INSERT INTO events (`+eventColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			e.Seq, e.At.UnixNano(), e.Kind, e.Namespace, e.ClaimID, e.BlobID, e.Detail, e.Actor, e.Reason, e.Tenant)
		if err != nil || n == 1 {
			return nil, err
		}
		return es, nil
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO events (` + eventColumns + `) VALUES `)
	args := make([]any, 0, 10*len(es))
	for i, e := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, e.Seq, e.At.UnixNano(), e.Kind, e.Namespace, e.ClaimID, e.BlobID, e.Detail, e.Actor, e.Reason, e.Tenant)
	}
	b.WriteString(` ON CONFLICT DO NOTHING RETURNING seq`)
	inserted := make(map[int64]bool, len(es))
	rows, err := q.query(b.String(), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		inserted[seq] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var missed []*meta.Event
	for _, e := range es {
		if !inserted[e.Seq] {
			missed = append(missed, e)
		}
	}
	return missed, nil
}

// finishEvents are the audit events of finished claims.
func finishEvents(rs []meta.FinishResult, actor string) []meta.Event {
	out := make([]meta.Event, 0, len(rs))
	for _, r := range rs {
		c := r.Claim
		out = append(out, meta.Event{At: c.DeletedAt, Kind: meta.FinishEventKind(c.DeleteReason), Namespace: c.Namespace,
			ClaimID: c.ID, BlobID: c.BlobID, Actor: actor, Reason: c.DeleteReason})
		if c.DeleteReason == meta.ReasonExpired && c.Reads == 0 {
			// Nobody read it: a consumer is dead or misrouted. Its own
			// kind, so that an operator can subscribe to just that.
			out = append(out, meta.Event{At: c.DeletedAt, Kind: meta.EventExpiredUnread, Namespace: c.Namespace,
				ClaimID: c.ID, BlobID: c.BlobID, Actor: actor, Reason: c.DeleteReason})
		}
	}
	return out
}

// createdEvent is the audit event of a claim that became active.
func createdEvent(c meta.Claim, b meta.Blob, at time.Time, actor string, dedup bool) meta.Event {
	detail := ""
	if dedup {
		detail = "dedup"
	}
	return meta.Event{At: at, Kind: meta.EventCreated, Namespace: c.Namespace, ClaimID: c.ID, BlobID: b.ID,
		Actor: actor, Detail: detail}
}

const eventColumns = `seq, at, kind, namespace, claim_id, blob_id, detail, actor, reason, tenant`

func (q *txq) events(query string, args ...any) ([]meta.Event, error) {
	return q.scanEvents(`SELECT `+eventColumns+` FROM events `+query, args, nil, nil)
}

// scanEvents runs query, whose columns are those of eventColumns and then
// one for each of extra, the destinations of the further columns, and
// returns its events; each, if set, is given every event once its row,
// extra included, is scanned.
func (q *txq) scanEvents(query string, args []any, extra []any, each func(meta.Event) error) ([]meta.Event, error) {
	rows, err := q.query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []meta.Event
	for rows.Next() {
		var e meta.Event
		var at int64
		if err := rows.Scan(append([]any{&e.Seq, &at, &e.Kind, &e.Namespace, &e.ClaimID, &e.BlobID, &e.Detail, &e.Actor,
			&e.Reason, &e.Tenant}, extra...)...); err != nil {
			return nil, err
		}
		e.At = time.Unix(0, at).UTC()
		if each != nil {
			if err := each(e); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ClaimEvents returns a page of one claim's events; see meta.AuditStore.
func (s *Store) ClaimEvents(ctx context.Context, claimID string, afterSeq int64, limit int) ([]meta.Event, error) {
	var out []meta.Event
	err := s.read(ctx, func(q *txq) error {
		var err error
		if out, err = q.events(`WHERE claim_id = ? AND claim_id <> '' AND seq > ? ORDER BY seq LIMIT ?`, claimID, afterSeq, limit); err != nil {
			return err
		}
		// A compacted claim's events are in its tombstone's trail
		// (ADR 0266), all or most of them.
		out, err = q.mergeClaimTrail(claimID, afterSeq, limit, out)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: events of claim %s: %w", claimID, err)
	}
	return out, nil
}

// NamespaceEvents returns a page of a namespace's events; see
// meta.AuditStore.
func (s *Store) NamespaceEvents(ctx context.Context, namespace string, since time.Time, afterSeq int64, limit int) ([]meta.Event, error) {
	var out []meta.Event
	err := s.read(ctx, func(q *txq) error {
		var err error
		if namespace == "" {
			return nil // events of no namespace are not listed here
		}
		out, err = q.pageWithTrails(namespace, afterSeq, math.MaxInt64, limit, func(after int64) ([]meta.Event, error) {
			return q.events(`WHERE namespace = ? AND namespace <> '' AND seq > ? AND at >= ? ORDER BY seq LIMIT ?`,
				namespace, after, since.UnixNano(), limit)
		}, func(e meta.Event) bool { return !e.At.Before(since) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: events of namespace %s: %w", namespace, err)
	}
	return out, nil
}

// TenantEvents returns a page of a tenant's administrative events; see
// meta.AuditStore.
func (s *Store) TenantEvents(ctx context.Context, tenant string, since time.Time, afterSeq int64, limit int) ([]meta.Event, error) {
	var out []meta.Event
	err := s.read(ctx, func(q *txq) error {
		var err error
		out, err = q.events(`WHERE tenant = ? AND tenant <> '' AND seq > ? AND at >= ? ORDER BY seq LIMIT ?`,
			tenant, afterSeq, since.UnixNano(), limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmeta: events of tenant %s: %w", tenant, err)
	}
	return out, nil
}

// PruneEvents deletes a page of events older than before; see
// meta.AuditStore.
func (s *Store) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int64
	err := s.write(ctx, func(q *txq) error {
		var err error
		// seq >= at for every event numbered from its time, so the seq
		// range is a superset read from the primary key; rows numbered
		// before that (small seqs) are filtered by at. An event whose seq
		// was moved past its time is pruned a little later: the safe side.
		//
		// An enabled, active subscription holds back every event after
		// its cursor (ADR 0240): the dispatcher has not delivered it yet.
		// A lagging one (its cursor past the bound, MarkLagging) no
		// longer does, so pruning stays bounded.
		bound := before.UnixNano()
		if held, ok, err := q.heldSeq(); err != nil {
			return err
		} else if ok && held+1 < bound {
			bound = held + 1
		}
		// Trails are not served past the cut either (ADR 0266).
		if err := q.recordEventsPrune(bound, before.UnixNano()); err != nil {
			return err
		}
		if q.d.dayPartitions {
			// Whole days go by dropping their partitions; the rows of the
			// legacy and default partitions in pages (events_days.go).
			if err := q.ensureEventDays(time.Now().UnixNano()); err != nil {
				return err
			}
			days, err := q.dropDayPartitions("events", bound)
			if err != nil {
				return err
			}
			n = int64(days)
			for _, part := range []string{"events_legacy", "events_default"} {
				k, err := q.exec(`DELETE FROM `+part+` WHERE seq IN (
					SELECT seq FROM `+part+` WHERE seq < ? AND at < ? ORDER BY seq LIMIT ?)`,
					bound, before.UnixNano(), limit)
				if err != nil {
					return err
				}
				n += k
			}
			return nil
		}
		n, err = q.exec(`DELETE FROM events WHERE seq IN (
			SELECT seq FROM events WHERE seq < ? AND at < ? ORDER BY seq LIMIT ?)`,
			bound, before.UnixNano(), limit)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlmeta: prune events before %s: %w", before.Format(time.RFC3339), err)
	}
	return int(n), nil
}
