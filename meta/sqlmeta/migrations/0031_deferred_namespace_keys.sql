-- The foreign keys from claims and blobs to namespaces are checked at
-- commit on PostgreSQL (DEFERRABLE INITIALLY DEFERRED), so that a put can
-- insert its rows before it takes its namespace's row (ADR 0126). The
-- change is PostgreSQL's own syntax: afterMigration runs it there.
-- SQLite, whose one writer takes no row locks, keeps them as they are.
SELECT 1;
