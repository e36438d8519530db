-- Named leases: one holder at a time until expires_at, so that a job that
-- must have a single runner across replicas (the sweeper's maintenance
-- runs, the backstop) is done by one process. A holder that dies simply
-- lets its lease expire.
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
