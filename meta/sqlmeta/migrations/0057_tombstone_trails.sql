-- Audit trails in tombstones (ADR 0266). When the sweeper compacts a
-- finished claim, its events stop being rows of events: they are encoded
-- into the tombstone's trail (meta/sqlmeta/trail.go), with the seqs of
-- the first and last of them and the class of the span between the two,
-- and their rows are deleted in the same transaction. The listings read
-- rows and trails and merge them by seq. A tombstone made before this
-- migration keeps an empty trail (first_seq = last_seq = 0): its events
-- stay rows and are read as before.
--
-- The trail column is a BLOB on SQLite and a BYTEA on PostgreSQL, so the
-- program adds it right after this file runs, in the same transaction
-- (migrate.go, afterMigration). The two indexes find the trails that have
-- an event in a window of seqs (stabTrails in trail_read.go): a
-- namespace's listing through the first, the listing of every namespace
-- and the event feed through the second. On PostgreSQL they are indexes
-- of the partitioned table, made on every day partition, existing and
-- new; neither is unique.
ALTER TABLE claim_tombstones ADD COLUMN first_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE claim_tombstones ADD COLUMN last_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE claim_tombstones ADD COLUMN span_class SMALLINT NOT NULL DEFAULT 0;
CREATE INDEX claim_tombstones_trail ON claim_tombstones (namespace, span_class, first_seq);
CREATE INDEX claim_tombstones_trail_seq ON claim_tombstones (span_class, first_seq);
