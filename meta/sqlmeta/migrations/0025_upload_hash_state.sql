-- The running sha256 of a resumable upload (ADR 0115): the hash state
-- over its first hashed_to bytes, saved with the offset it belongs to,
-- so that completion knows the payload's digest without reading it
-- back. It is used only when hashed_to equals the bytes received; an
-- append whose stored bytes the hash did not see exactly leaves it
-- behind, and completion then reads the object.
ALTER TABLE upload_progress ADD COLUMN hash_state TEXT NOT NULL DEFAULT '';
ALTER TABLE upload_progress ADD COLUMN hashed_to BIGINT NOT NULL DEFAULT 0;
