-- Each migration records the oldest schema version whose programs may
-- still run on a database that has it (ADR 0291): the previous release's
-- while migrations only add, so that a replica of that release that
-- restarts during a rolling upgrade, or a rollback of the binary, serves
-- on instead of refusing the newer schema. Migrations applied before
-- this one say nothing (0), and a program older than their version
-- refuses them as before. The statement is the same on both dialects.
ALTER TABLE schema_migrations ADD COLUMN oldest_reader BIGINT NOT NULL DEFAULT 0;
