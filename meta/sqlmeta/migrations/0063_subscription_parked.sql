-- Parked events of subscriptions (ADR 0277): an event that failed, or
-- waits behind an earlier failed event of its claim (claim_id is the
-- lane), while the subscription's cursor moves on past the other
-- claims' events. event is the feed event as JSON, stored whole so that
-- event pruning never takes what a lane still owes. state is 'parked'
-- (retried at next_attempt) or 'dead_lettered' (failed for the
-- configured attempts or age: kept for the tenant to list and retry).
-- Times are Unix nanoseconds, 0 for none. The statements are the same on
-- both dialects.
CREATE TABLE subscription_parked (
    tenant          TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    claim_id        TEXT NOT NULL DEFAULT '',
    event           TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'parked',
    attempts        INTEGER NOT NULL DEFAULT 0,
    failing_since   BIGINT NOT NULL DEFAULT 0,
    next_attempt    BIGINT NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (tenant, subscription_id, seq)
);
