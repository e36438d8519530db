package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Events by day on PostgreSQL (ADR 0263, migration 0056).
//
// events is partitioned by range of seq, one partition a UTC day
// (events_pYYYYMMDD), keyed by (namespace, seq): the partition key and
// the distribution column of a distributed PostgreSQL are in the key.
// Two more partitions complete it: events_legacy holds what was logged
// before the migration (up to the end of the day after it, so the day
// partitions start after it), and events_default catches an event whose
// day has no partition yet (the sweeper, which creates them
// eventDaysAhead days ahead, has not run for that long, or a clock far
// ahead). Retention drops the day partitions whole and deletes the rows
// of the other two in pages, as before. A day that already has rows in
// the default partition gets no partition of its own (PostgreSQL would
// refuse to create it), so those rows stay in the default partition and
// are pruned row by row too.
//
// seq is unique within a namespace only; the feed by seq across
// namespaces reads through events_seq and never ends a page between two
// events of one seq (FeedEvents).

// eventDaysAhead is how many days of partitions exist ahead of now.
const eventDaysAhead = 3

// partitionEvents turns events into the partitioned table
// (0056_events_by_day.sql), on PostgreSQL only.
func partitionEvents(q *txq) error {
	if !q.d.dayPartitions {
		return nil
	}
	now := time.Now().UnixNano()
	var top int64
	if err := q.queryRow(`SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&top); err != nil {
		return err
	}
	// The legacy partition ends at the midnight after both now and
	// the last event, so every existing row is in its range.
	end := max(now, top)
	end = end - end%dayNanos + dayNanos
	for _, stmt := range []string{
		`ALTER TABLE events RENAME TO events_legacy`,
		// Its key becomes the parent's (namespace, seq), built on attach.
		`ALTER TABLE events_legacy DROP CONSTRAINT events_pkey`,
		`ALTER INDEX events_claim RENAME TO events_legacy_claim`,
		`ALTER INDEX events_tenant RENAME TO events_legacy_tenant`,
		`CREATE TABLE events (
			seq       BIGINT NOT NULL,
			at        BIGINT NOT NULL,
			kind      TEXT NOT NULL,
			namespace TEXT NOT NULL DEFAULT '',
			claim_id  TEXT NOT NULL DEFAULT '',
			blob_id   TEXT NOT NULL DEFAULT '',
			detail    TEXT NOT NULL DEFAULT '',
			actor     TEXT NOT NULL DEFAULT '',
			reason    TEXT NOT NULL DEFAULT '',
			tenant    TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (namespace, seq)
		) PARTITION BY RANGE (seq)`,
		// The feed by seq across namespaces (FeedEvents, the SSE stream,
		// MAX(seq) of a renumbering) and the lookups of 0016 and 0018; a
		// namespace's events are read through the primary key, which
		// makes 0016's events_namespace redundant here.
		`CREATE INDEX events_seq ON events (seq)`,
		`CREATE INDEX events_claim ON events (claim_id, seq) WHERE claim_id <> ''`,
		`CREATE INDEX events_tenant ON events (tenant, seq) WHERE tenant <> ''`,
		`DROP INDEX events_namespace`,
		fmt.Sprintf(`ALTER TABLE events ATTACH PARTITION events_legacy FOR VALUES FROM (MINVALUE) TO (%d)`, end),
		`CREATE TABLE events_default PARTITION OF events DEFAULT`,
	} {
		if _, err := q.exec(stmt); err != nil {
			return fmt.Errorf("%.60s: %w", stmt, err)
		}
	}
	return q.ensureEventDays(end)
}

// ensureEventDays creates the day partitions of events from the day of
// from through eventDaysAhead days past now, skipping days that have
// rows in the default partition.
func (q *txq) ensureEventDays(from int64) error {
	if !q.d.dayPartitions {
		return nil
	}
	var partitioned bool
	if err := q.queryRow(`SELECT to_regclass('events_default') IS NOT NULL`).Scan(&partitioned); err != nil || !partitioned {
		return err // not yet migrated (an upgrade test stopping before 0056)
	}
	// Replicas starting at once, and the sweeper, create them one at a
	// time (ensureDayPartitions takes the lock; taken first here, the
	// check of the default partition is inside it too).
	if _, err := q.exec(q.d.migrationLock); err != nil {
		return err
	}
	to := time.Now().Add(eventDaysAhead * 24 * time.Hour).UnixNano()
	// Days before the end of the legacy partition are in it.
	var bound sql.NullString
	if err := q.queryRow(`SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_class c
		WHERE c.oid = to_regclass('events_legacy')`).Scan(&bound); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	legacyEnd := legacyBound(bound.String)
	from = max(from, legacyEnd)
	for day := from - from%dayNanos; day <= to; day += dayNanos {
		var taken bool
		if err := q.queryRow(`SELECT EXISTS (SELECT 1 FROM events_default WHERE seq >= ? AND seq < ?)`,
			day, day+dayNanos).Scan(&taken); err != nil {
			return err
		}
		if taken {
			continue
		}
		if err := q.ensureDayPartitions("events", day, day); err != nil {
			return err
		}
	}
	return nil
}

// legacyBound reads the end of the legacy partition from its bound as
// PostgreSQL prints it: FOR VALUES FROM (MINVALUE) TO ('N') (0 if none).
func legacyBound(expr string) int64 {
	_, to, ok := strings.Cut(expr, " TO (")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(strings.Trim(to, "()' "), 10, 64)
	return n
}

// ensureEventDaysAhead creates the day partitions of the events table
// ahead of now (PostgreSQL; nothing elsewhere). Open calls it, and so
// does every pruning pass of the sweeper (PruneEvents).
func (s *Store) ensureEventDaysAhead(ctx context.Context) error {
	if !s.d.dayPartitions {
		return nil
	}
	return s.write(ctx, func(q *txq) error { return q.ensureEventDays(time.Now().UnixNano()) })
}
