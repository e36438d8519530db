-- Labels as rows (ADR 0100), so that a listing filtered by a label
-- selector (`claimcheck ls NS -l k=v`, GET /v1/namespaces/{ns}/claims?label=k=v)
-- is an index range read instead of a scan of the namespace's claims and
-- their JSON labels column. claims.labels stays the source of what Stat
-- answers; these rows are written in the same transaction that writes it
-- (CreatePending, CommitExisting) and deleted with the claim row when
-- history is pruned.
--
-- created_at repeats the claim's, so that the index below also orders a
-- selector's matches newest first and a page continues from its cursor
-- without touching the claims table for rows it skips.
--
-- Rows of claims that existed before this migration are copied from their
-- JSON column by the program right after this file runs, in the same
-- transaction (migrate.go, afterMigration): the two databases spell JSON
-- functions differently and every migration file must run unchanged on
-- both.
CREATE TABLE claim_labels (
    claim_id    TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    label_key   TEXT NOT NULL,
    label_value TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (claim_id, label_key)
);

CREATE INDEX claim_labels_select ON claim_labels (namespace, label_key, label_value, created_at, claim_id);
