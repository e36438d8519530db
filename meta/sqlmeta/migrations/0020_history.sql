-- Pruning of finished rows (ADR 0077): finished claims and collected
-- blobs are deleted once they are older than history.retention, oldest
-- first, through these two partial indexes, which hold only such rows.
CREATE INDEX claims_finished ON claims (deleted_at) WHERE state = 'deleted';
CREATE INDEX blobs_deleted ON blobs (state_at) WHERE state = 'deleted';
