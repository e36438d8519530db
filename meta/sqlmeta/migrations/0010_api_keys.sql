-- API keys: the credentials of the HTTP API when auth is on. The secret
-- is never stored, only its sha256 (hash, hex). Keys are revoked, never
-- deleted, so an audit event that names a key id can always be resolved.
CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL,
    role       TEXT NOT NULL,
    namespace  TEXT NOT NULL DEFAULT '',
    name       TEXT NOT NULL DEFAULT '',
    hash       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);
