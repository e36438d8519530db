-- Retention prunes by seq, which is the event time in nanoseconds for
-- every event logged since 0016 (and never smaller than it), so the
-- separate index on at is not needed: it cost every event insert one more
-- index update (docs/PERFORMANCE.md, "Audit trail").
DROP INDEX events_at;
