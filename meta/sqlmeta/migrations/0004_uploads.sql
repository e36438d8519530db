-- Direct uploads (init → client PUT → confirm). An upload is a pending
-- claim created by CreatePending like any put; this table only adds what
-- confirm and idempotent inits need: the size and digest the client
-- declared, and its idempotency key. The claim row carries the due time
-- (the confirm deadline), so a row here never needs one of its own.

CREATE TABLE uploads (
    claim_id        TEXT PRIMARY KEY REFERENCES claims (id),
    namespace       TEXT NOT NULL,
    blob_id         TEXT NOT NULL,
    object_key      TEXT NOT NULL,
    size            BIGINT NOT NULL,
    digest          TEXT NOT NULL,           -- sha256:<hex> declared at init
    content_type    TEXT NOT NULL DEFAULT '',
    idempotency_key TEXT,                    -- NULL when the client sent none
    created_at      BIGINT NOT NULL
);

-- The same key in the same namespace names the same upload.
CREATE UNIQUE INDEX uploads_idempotency ON uploads (namespace, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- secrets holds values generated once and shared by every process on the
-- database (the key that signs upload URLs served by claimcheck itself).
CREATE TABLE secrets (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
