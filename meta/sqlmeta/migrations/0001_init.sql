-- Initial schema. Portable between SQLite and PostgreSQL: TEXT, BIGINT and
-- INTEGER columns only, times as BIGINT Unix nanoseconds (NULL = unset),
-- booleans as INTEGER 0/1, JSON as TEXT. Due times are indexed by partial
-- indexes so that sweeps read "due <= now ORDER BY due LIMIT n" from the
-- index and never scan terminal rows.

CREATE TABLE namespaces (
    name           TEXT PRIMARY KEY,
    used_bytes     BIGINT NOT NULL DEFAULT 0, -- sizes of active claims
    reserved_bytes BIGINT NOT NULL DEFAULT 0, -- reservations of pending claims
    active_claims  BIGINT NOT NULL DEFAULT 0,
    pending_claims BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE blobs (
    id          TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL REFERENCES namespaces (name),
    digest      TEXT,                        -- NULL until committed; NULL on a deduplicated staging blob
    -- dedupable is 1 on the one blob per (namespace, digest) that dedup may
    -- reuse. A commit that may not reuse the current one (dedup off, or
    -- created before DedupNotBefore) takes the mark over, so an old object
    -- and a fresh one of the same content can both be committed while the
    -- unique index below still holds.
    dedupable   INTEGER NOT NULL DEFAULT 0,
    size        BIGINT NOT NULL DEFAULT 0,
    stored_size BIGINT NOT NULL DEFAULT 0,
    compression TEXT NOT NULL DEFAULT '',
    object_key  TEXT NOT NULL,
    state       TEXT NOT NULL,               -- staging | committed | orphaned | deleting | deleted
    refcount    BIGINT NOT NULL DEFAULT 0,   -- a hint; collection re-checks claims
    created_at  BIGINT NOT NULL,
    state_at    BIGINT NOT NULL,
    collect_at  BIGINT,                      -- due time; NULL while committed and once deleted
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT NOT NULL DEFAULT '',
    version     BIGINT NOT NULL DEFAULT 1
);

-- At most one dedup candidate per (namespace, digest) among live blobs. A
-- deleting blob is outside the predicate: it counts as absent for dedup.
CREATE UNIQUE INDEX blobs_dedup ON blobs (namespace, digest)
    WHERE state IN ('committed', 'orphaned') AND dedupable = 1;

CREATE INDEX blobs_collect_at ON blobs (collect_at) WHERE collect_at IS NOT NULL;

CREATE TABLE claims (
    id                   TEXT PRIMARY KEY,
    namespace            TEXT NOT NULL REFERENCES namespaces (name),
    blob_id              TEXT NOT NULL REFERENCES blobs (id),
    state                TEXT NOT NULL,      -- pending | active | deleted
    size                 BIGINT NOT NULL DEFAULT 0,
    reserved_bytes       BIGINT NOT NULL DEFAULT 0,
    content_type         TEXT NOT NULL DEFAULT '',
    labels               TEXT,               -- JSON object, NULL when empty
    created_at           BIGINT NOT NULL,
    expires_at           BIGINT,
    due_at               BIGINT,             -- NULL once deleted
    due_reason           TEXT NOT NULL DEFAULT '',
    delete_after_read    INTEGER NOT NULL DEFAULT 0,
    retention_after_read BIGINT NOT NULL DEFAULT 0, -- nanoseconds
    grace_period         BIGINT NOT NULL DEFAULT 0, -- nanoseconds
    reads                BIGINT NOT NULL DEFAULT 0,
    first_read_at        BIGINT,
    last_read_at         BIGINT,
    consumers            INTEGER NOT NULL DEFAULT 1,
    consumer_names       TEXT,               -- JSON array, NULL when any name counts
    deleted_at           BIGINT,
    delete_reason        TEXT NOT NULL DEFAULT ''
);

CREATE INDEX claims_due_at ON claims (due_at) WHERE due_at IS NOT NULL;

-- Collection and finishing ask "does any live claim still point at this
-- blob?"; this index answers it without a scan.
CREATE INDEX claims_blob_id ON claims (blob_id);

CREATE TABLE claim_releases (
    claim_id    TEXT NOT NULL REFERENCES claims (id),
    consumer    TEXT NOT NULL,
    released_at BIGINT NOT NULL,
    seq         INTEGER NOT NULL,            -- 1, 2, ... in release order
    PRIMARY KEY (claim_id, consumer)
);
