-- Keys for a PostgreSQL distributed by namespace (ADR 0264). Every table
-- that grows with claims carries the namespace, so that a distributed
-- PostgreSQL (Citus) can place a namespace's rows together on one shard
-- and route a statement that names the namespace to that shard alone.
--
-- The three tables that did not carry it get it here, copied from the
-- claim (or, for a block table, from a blob that owns the object; a
-- table of an object no blob owns any more keeps '' until collection
-- deletes it). Every writer sets it from now on.
--
-- The primary keys gain the namespace on PostgreSQL, where a distributed
-- table needs its distribution column in every primary and unique key,
-- and the foreign keys between these tables become (id, namespace) pairs:
-- PostgreSQL's own ALTER TABLE syntax, so afterMigration runs it there
-- (migrate.go, distributionKeys). The namespace comes second in the keys
-- (id, namespace), so that a lookup by id alone, which every path that
-- does not know the namespace makes, is still a read of the primary key
-- with no second index to keep. SQLite, which is never distributed,
-- keeps its keys; it only gets the unique index the block table's upsert
-- names as its conflict target on both databases.
ALTER TABLE claim_releases ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE claim_releases SET namespace = COALESCE(
    (SELECT claims.namespace FROM claims WHERE claims.id = claim_releases.claim_id), '');

ALTER TABLE upload_progress ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE upload_progress SET namespace = COALESCE(
    (SELECT claims.namespace FROM claims WHERE claims.id = upload_progress.claim_id), '');

ALTER TABLE object_blocks ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE object_blocks SET namespace = COALESCE(
    (SELECT MIN(blobs.namespace) FROM blobs WHERE blobs.object_key = object_blocks.object_key AND blobs.state <> 'deleted'), '');
CREATE UNIQUE INDEX object_blocks_key_ns ON object_blocks (object_key, namespace);
