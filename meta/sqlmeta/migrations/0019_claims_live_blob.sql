-- "Does any live claim still point at this blob?" is asked by every
-- finish, every collection and every backstop page. The full index on
-- claims (blob_id) answered it by walking every claim the blob ever had,
-- finished ones included, and reading each row's state: with dedup, a
-- popular payload's blob collects claims for as long as it lives, so the
-- cost of a finish grew with the blob's history (docs/PERFORMANCE.md,
-- "Finishing a claim of a long-lived blob"). This partial index holds the
-- live claims only, so the question costs the number of live claims of
-- the blob. Nothing else looks claims up by blob: the full index goes.
CREATE INDEX claims_live_blob ON claims (blob_id) WHERE state IN ('pending', 'active');
DROP INDEX claims_blob_id;
