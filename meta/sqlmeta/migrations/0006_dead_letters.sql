-- Dead letters: a blob whose object delete failed max_attempts times is
-- parked. It stays in deleting (it still owns its object and is absent for
-- dedup) but collect_at is cleared, so it leaves the due index and no
-- sweeper retries it in a loop; dead_at says since when it is parked, and
-- attempts and last_error are kept. `claimcheck dlq retry` puts it back.

ALTER TABLE blobs ADD COLUMN dead_at BIGINT;

-- Listing and counting the parked blobs reads only them.
CREATE INDEX blobs_dead_letters ON blobs (id) WHERE dead_at IS NOT NULL;
