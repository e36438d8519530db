-- Subscription ids are a tenant's own names (ADR 0269): the key is
-- (tenant, id), so two tenants may each have a subscription "orders"
-- and creating one never tells a tenant that another tenant's id exists.
-- The operator's configured targets (source 'config') move to their own
-- id space, 'config:' and the id of the config file: an id made over the
-- API never has a ':' (engine/subscriptions.go), so no row a tenant
-- makes can take the id of a target the operator adds later, and the
-- start of the server never fails on a tenant's row.
--
-- SQLite cannot change a primary key in place, so the table is built
-- again with the same columns and the rows copied; the statements are
-- the same on both dialects. A server of the version before keeps
-- working on the new table (same columns; it checks ids across tenants,
-- which is stricter than the key); ADR 0269 says what it does to the
-- configured targets' rows if it starts after this migration.
CREATE TABLE subscriptions_by_tenant (
    id                 TEXT NOT NULL,
    tenant             TEXT NOT NULL,
    url                TEXT NOT NULL,
    types              TEXT NOT NULL DEFAULT '',
    namespaces         TEXT NOT NULL DEFAULT '',
    labels             TEXT NOT NULL DEFAULT '',
    secret             TEXT NOT NULL,
    secret_key_id      TEXT NOT NULL DEFAULT '',
    enabled            INTEGER NOT NULL DEFAULT 1,
    source             TEXT NOT NULL DEFAULT 'api',
    created_at         BIGINT NOT NULL,
    cursor_seq         BIGINT NOT NULL DEFAULT 0,
    state              TEXT NOT NULL DEFAULT 'active',
    failing_since      BIGINT NOT NULL DEFAULT 0,
    attempts           INTEGER NOT NULL DEFAULT 0,
    last_error         TEXT NOT NULL DEFAULT '',
    delivered          BIGINT NOT NULL DEFAULT 0,
    events_per_request INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, id)
);
INSERT INTO subscriptions_by_tenant (id, tenant, url, types, namespaces, labels, secret, secret_key_id, enabled, source,
    created_at, cursor_seq, state, failing_since, attempts, last_error, delivered, events_per_request)
SELECT CASE WHEN source = 'config' THEN 'config:' || id ELSE id END, tenant, url, types, namespaces, labels, secret,
    secret_key_id, enabled, source, created_at, cursor_seq, state, failing_since, attempts, last_error, delivered,
    events_per_request
FROM subscriptions;
DROP TABLE subscriptions;
ALTER TABLE subscriptions_by_tenant RENAME TO subscriptions;
