-- Encryption at rest (ADR 0066): per-namespace data keys, stored wrapped
-- (AES-256-GCM) by the master key named by master_key_id, so the master
-- key can be rotated by re-wrapping rows. A namespace has at most one live
-- key; destroying it (crypto-shredding) wipes wrapped and sets
-- destroyed_at, and the row stays as a tombstone so that a redeem of an
-- object encrypted under it can say why it is unreadable. Objects name
-- their key in their object key.
CREATE TABLE data_keys (
    id            TEXT PRIMARY KEY,
    namespace     TEXT NOT NULL,
    master_key_id TEXT NOT NULL,
    wrapped       TEXT NOT NULL DEFAULT '', -- base64 of nonce || sealed key; '' once destroyed
    created_at    BIGINT NOT NULL,
    destroyed_at  BIGINT
);

CREATE UNIQUE INDEX data_keys_live ON data_keys (namespace) WHERE destroyed_at IS NULL;
