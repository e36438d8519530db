-- Subscriptions (ADR 0240): receivers of a tenant's claim events. The
-- events table is their outbox; a subscription only keeps its cursor
-- (the seq every earlier event of which was delivered or filtered out),
-- so a put writes nothing for it. Types and namespaces are
-- comma-separated lists ('' = all), labels a JSON object ('' = none).
-- secret is base64 of the signing secret, sealed with the master key
-- secret_key_id names ('' = stored as given: no master key set).
CREATE TABLE subscriptions (
    id            TEXT PRIMARY KEY,
    tenant        TEXT NOT NULL,
    url           TEXT NOT NULL,
    types         TEXT NOT NULL DEFAULT '',
    namespaces    TEXT NOT NULL DEFAULT '',
    labels        TEXT NOT NULL DEFAULT '',
    secret        TEXT NOT NULL,
    secret_key_id TEXT NOT NULL DEFAULT '',
    enabled       INTEGER NOT NULL DEFAULT 1,
    source        TEXT NOT NULL DEFAULT 'api',
    created_at    BIGINT NOT NULL,
    cursor_seq    BIGINT NOT NULL DEFAULT 0,
    state         TEXT NOT NULL DEFAULT 'active',
    failing_since BIGINT NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT NOT NULL DEFAULT '',
    delivered     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX subscriptions_tenant ON subscriptions (tenant, id);
