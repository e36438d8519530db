-- Listing a namespace's claims (ADR 0100) without a scan:
--   newest first: (namespace, created_at, id), read backwards from the
--   cursor;
--   soonest expiry first, live claims only (what a keeper that extends
--   claims before they expire reads): (namespace, expires_at, id) over
--   pending and active rows. Finished rows stay out of it, so its size is
--   the number of live claims, and an extension (ADR 0101) moves the row
--   within it in the transaction that changes expires_at.
CREATE INDEX claims_ns_created ON claims (namespace, created_at, id);
CREATE INDEX claims_ns_expiring ON claims (namespace, expires_at, id) WHERE state IN ('pending', 'active');
