-- Legal holds (ADR 0065). A claim on hold, or any claim of a namespace on
-- hold, is never finished: not by expiry, release, delete-after-read,
-- explicit delete or GC.
--
-- A held claim is "parked": parked = 1 takes it out of the due index
-- below, so the sweeper never reads it again and never spins on it, while
-- due_at and due_reason keep the deadline it would have had (reads and
-- releases still lower it as usual). Lifting the last hold sets parked = 0
-- and the claim is finished at once if that deadline has passed.
--
-- Every finish compares and swaps on parked = 0 and on the absence of a
-- namespace hold, in the finishing statement itself, so a hold set
-- concurrently either wins the row or comes after the finish, never
-- in between.
ALTER TABLE claims ADD COLUMN parked INTEGER NOT NULL DEFAULT 0;
ALTER TABLE claims ADD COLUMN held_at BIGINT;                  -- claim-level hold; NULL = none
ALTER TABLE claims ADD COLUMN hold_reason TEXT NOT NULL DEFAULT '';

CREATE TABLE namespace_holds (
    namespace TEXT PRIMARY KEY,
    reason    TEXT NOT NULL DEFAULT '',
    held_at   BIGINT NOT NULL
);

-- The due index leaves parked claims out (it replaces the one of 0001).
DROP INDEX claims_due_at;
CREATE INDEX claims_due_at ON claims (due_at) WHERE due_at IS NOT NULL AND parked = 0;

-- Lifting a namespace hold unparks its claims without a scan; listing
-- held claims (and refusing to shred a namespace that has some) too.
CREATE INDEX claims_parked ON claims (namespace) WHERE parked = 1;
CREATE INDEX claims_held ON claims (namespace) WHERE held_at IS NOT NULL;
