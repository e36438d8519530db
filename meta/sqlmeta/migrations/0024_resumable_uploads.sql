-- Resumable uploads (ADR 0115): a direct upload whose bytes arrive in
-- appends over many requests (the tus protocol of the HTTP API). The
-- upload is an ordinary pending claim with a staging blob and an uploads
-- row; this adds what the appends need.
--
-- upload_progress: how many bytes are stored so far, the offset the
-- next append continues from. The storage's own state is never asked:
-- this row is the truth, and bytes past it count as never written.
CREATE TABLE upload_progress (
    claim_id   TEXT PRIMARY KEY REFERENCES claims (id),
    received   BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- The storage's handle on an object still being appended to (S3: the
-- multipart upload id), kept on the blob that owns the object's key, so
-- that collecting the blob aborts it too: no listing ever needs to find
-- an incomplete upload. Empty for every other blob.
ALTER TABLE blobs ADD COLUMN append_handle TEXT NOT NULL DEFAULT '';
