-- Integrity under damage (ADR 0095): a blob whose object was found
-- altered, short or missing is marked damaged, a flag beside its state
-- rather than a state of its own, because the lifecycle of the row does
-- not change: its claims still own it, it is still collected when the
-- last one finishes. What changes is that dedup never attaches a new claim
-- to it (a put of the same bytes repairs it instead) and a redeem answers
-- checksum_mismatch at once. damaged_at is NULL while the blob is healthy;
-- damage says what was found (cause: detail). Both change only under the
-- same compare-and-swap as the state, on (id, object_key, state).
ALTER TABLE blobs ADD COLUMN damaged_at BIGINT;
ALTER TABLE blobs ADD COLUMN damage TEXT NOT NULL DEFAULT '';

-- The damaged blobs, for fsck, the gauge and the repair report, without a
-- scan of the whole table: normally empty.
CREATE INDEX blobs_damaged ON blobs (damaged_at) WHERE damaged_at IS NOT NULL;
