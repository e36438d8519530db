package sqlmeta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// PruneHistory deletes tombstones, finished claims, collected blobs and
// expired leases older than before; see meta.HistoryStore. Claims go
// first, so that the blobs they pointed at lose their last reference in
// the same call.
func (s *Store) PruneHistory(ctx context.Context, before time.Time, limit int) (meta.PruneResult, error) {
	var res meta.PruneResult
	if limit <= 0 {
		return res, nil
	}
	cut := before.UnixNano()
	err := s.write(ctx, func(q *txq) error {
		res.Claims, res.Tombstones, res.TombstoneDays = 0, 0, 0
		var err error
		if res.Tombstones, res.TombstoneDays, err = q.pruneTombstones(cut, limit); err != nil {
			return err
		}
		found := make(map[string]bool, limit)
		if err := q.execReturningIDs(found, `SELECT id FROM claims WHERE state = 'deleted' AND deleted_at < ?
			ORDER BY deleted_at LIMIT ?`, cut, limit); err != nil || len(found) == 0 {
			return err
		}
		ids := slices.Collect(maps.Keys(found))
		return q.deleteClaimRows(ids, func(k int) { res.Claims += k })
	})
	if err != nil {
		return meta.PruneResult{}, fmt.Errorf("sqlmeta: prune claims finished before %s: %w", before.Format(time.RFC3339), err)
	}
	err = s.write(ctx, func(q *txq) error {
		n, err := q.pruneDeletedBlobs(cut, limit)
		res.Blobs = n
		if err != nil {
			return err
		}
		// A lease is released by deleting its row; one that expired
		// before the cut was left by a holder that died (a resumable
		// upload's lock on a replica that crashed, ADR 0185) and is free
		// anyway. Leases are few: the live locks and such leftovers.
		_, err = q.exec(`DELETE FROM leases WHERE expires_at < ?`, cut)
		return err
	})
	if err != nil {
		res.Blobs = 0
		return res, fmt.Errorf("sqlmeta: prune blobs collected before %s: %w", before.Format(time.RFC3339), err)
	}
	return res, nil
}

// pruneDeletedBlobs deletes up to limit rows of blobs whose collection
// finished before cut. A deleted blob owns no object (the backstop treats
// its key as unknown) and is outside the dedup index, so its row only
// serves as history. The claims check skips a blob that a claim row still
// points at: the claim was finished after the blob's collection by a
// replica whose clock ran ahead, and goes a little later.
func (q *txq) pruneDeletedBlobs(cut int64, limit int) (int, error) {
	n, err := q.exec(`DELETE FROM blobs WHERE id IN (
		SELECT id FROM blobs WHERE state = 'deleted' AND state_at < ?
			AND NOT EXISTS (SELECT 1 FROM claims WHERE claims.blob_id = blobs.id)
		ORDER BY state_at LIMIT ?) AND state = 'deleted'`, cut, limit)
	return int(n), err
}

// Tombstones (ADR 0263, migration 0055).
//
// A finished claim answers gone with its reason for as long as history
// keeps it, but nothing else of its row is read once it is finished and
// its readers are served: the sweeper compacts it (CompactHistory) into a
// tombstone of four columns, and the claims row, its labels, releases
// and upload rows, and the row of its collected blob go. Loading a claim
// that has no row falls back to its tombstone (loadClaim), so Stat,
// redeem, release and delete of it answer as before. Its events go into
// the tombstone too, as a compact trail, and their rows go (ADR 0266,
// trail.go and trail_read.go).

// createTombstones creates claim_tombstones as each database keeps it
// (0055_claim_tombstones.sql).
func createTombstones(q *txq) error {
	if !q.d.dayPartitions {
		_, err := q.exec(`CREATE TABLE claim_tombstones (
			id          TEXT NOT NULL PRIMARY KEY,
			namespace   TEXT NOT NULL,
			finished_at BIGINT NOT NULL,
			reason      TEXT NOT NULL
		) WITHOUT ROWID;
		CREATE INDEX claim_tombstones_finished ON claim_tombstones (finished_at)`)
		return err
	}
	// Partitions are created by the compaction that fills them
	// (ensureDayPartitions) and dropped whole by retention.
	_, err := q.exec(`CREATE TABLE claim_tombstones (
			id          TEXT NOT NULL,
			namespace   TEXT NOT NULL,
			finished_at BIGINT NOT NULL,
			reason      TEXT NOT NULL,
			PRIMARY KEY (id, namespace, finished_at)
		) PARTITION BY RANGE (finished_at)`)
	return err
}

// finishedClaim is a finished claim CompactHistory turns into a
// tombstone.
type finishedClaim struct {
	id, namespace, blob, reason string
	at, created                 int64
}

// loadTombstone reads the tombstone of a compacted claim as the claim it
// was: finished, with its namespace, reason and finish time.
func (q *txq) loadTombstone(id string) (meta.Claim, error) {
	var (
		c  = meta.Claim{ID: id, State: meta.ClaimDeleted}
		at int64
	)
	err := q.queryRow(`SELECT namespace, finished_at, reason FROM claim_tombstones WHERE id = ?`, id).
		Scan(&c.Namespace, &at, &c.DeleteReason)
	if errors.Is(err, sql.ErrNoRows) {
		return meta.Claim{}, fmt.Errorf("claim %s: %w", id, meta.ErrNotFound)
	}
	if err != nil {
		return meta.Claim{}, err
	}
	c.DeletedAt = time.Unix(0, at).UTC()
	return c, nil
}

// heldSeq is the seq every event after which an enabled, active
// subscription still holds back (ADR 0240): the dispatcher has not
// delivered it. ok is false when no subscription holds anything. A lagging
// one (its cursor past the bound, MarkLagging) holds nothing, so pruning
// and compaction stay bounded.
func (q *txq) heldSeq() (seq int64, ok bool, err error) {
	var held sql.NullInt64
	if err := q.queryRow(`SELECT MIN(cursor_seq) FROM subscriptions WHERE enabled = 1 AND state = ?`,
		meta.SubscriptionActive).Scan(&held); err != nil {
		return 0, false, err
	}
	return held.Int64, held.Valid, nil
}

// heldSlack is how far before a subscription's cursor a claim must have
// finished for CompactHistory to take its row.
const heldSlack = int64(time.Minute)

// CompactHistory turns claims finished before before into tombstones; see
// meta.HistoryStore.
func (s *Store) CompactHistory(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	// The pass that compacts is also the one that keeps the events
	// partitions ahead when events are kept forever (no PruneEvents).
	if err := s.ensureEventDaysAhead(ctx); err != nil {
		return 0, fmt.Errorf("sqlmeta: create the events partitions ahead: %w", err)
	}
	var n int
	err := s.write(ctx, func(q *txq) error {
		n = 0
		cut := before.UnixNano()
		// The event feed joins a claim event to the claim's row for its
		// labels (FeedEvents): a claim whose events a subscription has not
		// delivered keeps its row until they are. Its events are numbered
		// from times no later than its finish, moved past them only on a
		// collision (audit.go), by far less than heldSlack.
		if held, ok, err := q.heldSeq(); err != nil {
			return err
		} else if ok && held-heldSlack < cut {
			cut = held - heldSlack
		}
		var page []finishedClaim
		rows, err := q.query(`SELECT id, namespace, blob_id, delete_reason, deleted_at, created_at FROM claims
			WHERE state = 'deleted' AND deleted_at < ? ORDER BY deleted_at LIMIT ?`, cut, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var f finishedClaim
			if err := rows.Scan(&f.id, &f.namespace, &f.blob, &f.reason, &f.at, &f.created); err != nil {
				rows.Close()
				return err
			}
			page = append(page, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(page) == 0 {
			return err
		}
		if q.d.dayPartitions {
			if err := q.ensureDayPartitions("claim_tombstones", page[0].at, page[len(page)-1].at); err != nil {
				return err
			}
		}
		// The claims' events go into their tombstones' trails (ADR 0266)
		// and their rows go, in this transaction.
		folded, keys, top, err := q.foldTrails(page)
		if err != nil {
			return err
		}
		for part := range slices.Chunk(page, eventChunk) { // 8 parameters a row
			args := make([]any, 0, 8*len(part))
			for _, f := range part {
				t := folded[f.id]
				if t.trail == nil {
					t.trail = []byte{} // NOT NULL: no events folded
				}
				args = append(args, f.id, f.namespace, f.at, f.reason, t.trail, t.first, t.last, t.span)
			}
			if _, err := q.exec(`INSERT INTO claim_tombstones (id, namespace, finished_at, reason, trail, first_seq, last_seq, span_class) VALUES `+
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?), ", len(part)), ", ")+
				` ON CONFLICT DO NOTHING`, args...); err != nil {
				return err
			}
		}
		if err := q.deleteEventKeys(keys); err != nil {
			return err
		}
		if err := q.raiseTrailTop(top); err != nil {
			return err
		}
		ids := make([]string, len(page))
		blobs := make([]string, 0, len(page))
		for i, f := range page {
			ids[i] = f.id
			blobs = append(blobs, f.blob)
		}
		if err := q.deleteClaimRows(ids, func(k int) { n += k }); err != nil {
			return err
		}
		// The collected blobs of the page lose their last claim row here;
		// a blob still being collected (its grace period is longer than
		// the compaction's delay) goes with the next compaction after.
		slices.Sort(blobs)
		return chunks(slices.Compact(blobs), func(part []string) error {
			_, err := q.exec(`DELETE FROM blobs WHERE id IN (`+placeholders(len(part))+`) AND state = 'deleted'
				AND NOT EXISTS (SELECT 1 FROM claims WHERE claims.blob_id = blobs.id)`, anys(part)...)
			return err
		})
	})
	if err != nil {
		return 0, fmt.Errorf("sqlmeta: compact claims finished before %s: %w", before.Format(time.RFC3339), err)
	}
	if err := s.write(ctx, func(q *txq) error {
		_, err := q.pruneDeletedBlobs(before.UnixNano(), limit)
		return err
	}); err != nil {
		return n, fmt.Errorf("sqlmeta: compact blobs collected before %s: %w", before.Format(time.RFC3339), err)
	}
	return n, nil
}

// deleteClaimRows deletes finished claims' rows with the rows that
// reference them: the consumers that released them, the upload they
// came from (its idempotency key may then name a new upload) and their
// label rows (0022). deleted is told how many claim rows went.
func (q *txq) deleteClaimRows(ids []string, deleted func(int)) error {
	for _, table := range []string{"claim_releases", "upload_progress", "uploads", "claim_labels"} {
		if err := chunks(ids, func(part []string) error {
			_, err := q.exec(`DELETE FROM `+table+` WHERE claim_id IN (`+placeholders(len(part))+`)`, anys(part)...)
			return err
		}); err != nil {
			return err
		}
	}
	return chunks(ids, func(part []string) error {
		n, err := q.exec(`DELETE FROM claims WHERE state = 'deleted' AND id IN (`+placeholders(len(part))+`)`, anys(part)...)
		deleted(int(n))
		return err
	})
}

// pruneTombstones deletes the tombstones of claims finished before cut.
// On SQLite that is up to limit rows, oldest first, through the index
// on finished_at (rows). On PostgreSQL it drops each day's partition that
// ends at or before cut, whatever its size (days): a day finishing later
// than cut stays whole until a later call, so history is kept up to a
// day longer than its retention.
func (q *txq) pruneTombstones(cut int64, limit int) (rows, days int, err error) {
	if q.d.dayPartitions {
		days, err = q.dropDayPartitions("claim_tombstones", cut)
		return 0, days, err
	}
	n, err := q.exec(`DELETE FROM claim_tombstones WHERE id IN (
		SELECT id FROM claim_tombstones WHERE finished_at < ? ORDER BY finished_at LIMIT ?)`, cut, limit)
	return int(n), 0, err
}

// Day partitions (PostgreSQL). A partition of table holds one UTC day of
// its key (Unix nanoseconds), [midnight, next midnight), and is named
// table_pYYYYMMDD, which is all dropDayPartitions reads.

const dayNanos = int64(24 * time.Hour)

func dayPartition(table string, day int64) string {
	return table + "_p" + time.Unix(0, day).UTC().Format("20060102")
}

// ensureDayPartitions creates the partitions of table for every day from
// the day of from to the day of to. Two processes creating the same one
// (a replica's sweeper and `sweep --once`) take turns on the migration
// lock, so the second finds it there.
func (q *txq) ensureDayPartitions(table string, from, to int64) error {
	if _, err := q.exec(q.d.migrationLock); err != nil {
		return err
	}
	for day := from - from%dayNanos; day <= to; day += dayNanos {
		if _, err := q.exec(fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM (%d) TO (%d)`,
			dayPartition(table, day), table, day, day+dayNanos)); err != nil {
			return err
		}
	}
	return nil
}

// dropDayPartitions drops the partitions of table whose day ends at or
// before cut and returns how many it dropped.
func (q *txq) dropDayPartitions(table string, cut int64) (int, error) {
	rows, err := q.query(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = CAST(? AS regclass)`, table)
	if err != nil {
		return 0, err
	}
	var old []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, err
		}
		day, err := time.Parse("20060102", strings.TrimPrefix(name, table+"_p"))
		if err == nil && day.UnixNano()+dayNanos <= cut {
			old = append(old, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	slices.Sort(old)
	for _, name := range old {
		if _, err := q.exec(`DROP TABLE ` + name); err != nil {
			return 0, err
		}
	}
	return len(old), nil
}
