-- The claims a namespace has finished, for any reason (expired, deleted,
-- released, never confirmed), counted in the transaction that finishes
-- them (finish.go). It is a history counter, not a quota one: nothing
-- recomputes it from the claims, and namespaces that existed before this
-- migration count from 0, since this version. The statement is the same
-- on both dialects.
ALTER TABLE namespaces ADD COLUMN finished_claims BIGINT NOT NULL DEFAULT 0;
