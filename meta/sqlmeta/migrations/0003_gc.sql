-- Garbage-collection support: the backstop's resumable cursors and an
-- append-only events table for findings an operator must see (a blob row
-- whose object is missing is reported, never deleted silently).

-- cursors holds named positions of long paged jobs, so a job that stops
-- (crash, lease lost, budget spent) resumes where it was.
CREATE TABLE cursors (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- events is an append-only log; seq orders it (assigned max+1 in the
-- appending transaction, portable to both databases). Rows are never
-- updated.
CREATE TABLE events (
    seq       BIGINT PRIMARY KEY,
    at        BIGINT NOT NULL,
    kind      TEXT NOT NULL,
    namespace TEXT NOT NULL DEFAULT '',
    claim_id  TEXT NOT NULL DEFAULT '',
    blob_id   TEXT NOT NULL DEFAULT '',
    detail    TEXT NOT NULL DEFAULT ''
);

-- The backstop looks up listed object keys; only rows that are not
-- deleted can own an object.
CREATE INDEX blobs_live_key ON blobs (object_key) WHERE state <> 'deleted';
