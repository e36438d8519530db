-- Audit trail: lifecycle events carry who caused them (the API key id, or
-- "sweeper") and, for finished claims, the reason. Per-claim lookups read
-- events_claim; retention pruning reads events_at, oldest first.
ALTER TABLE events ADD COLUMN actor TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN reason TEXT NOT NULL DEFAULT '';
CREATE INDEX events_claim ON events (claim_id, seq) WHERE claim_id <> '';
CREATE INDEX events_namespace ON events (namespace, seq) WHERE namespace <> '';
CREATE INDEX events_at ON events (at);
