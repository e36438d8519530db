-- A subscription's own CloudEvents mode (ADR 0240): the most events one
-- delivery carries, 1 structured mode, above 1 batched mode, 0 the
-- dispatcher's configured default (what every existing row keeps).
ALTER TABLE subscriptions ADD COLUMN events_per_request INTEGER NOT NULL DEFAULT 0;
