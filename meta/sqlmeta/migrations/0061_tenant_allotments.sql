-- Tenant quota by allotments (ADR 0264). A put used to check its
-- tenant's quota by locking the tenant row and summing the usage of all
-- the tenant's namespaces: a transaction over every namespace of the
-- tenant on every put, which a PostgreSQL distributed by namespace runs
-- across shards. Now each namespace holds an allotment of its tenant's
-- budget, allot_bytes and allot_claims, the usage (used + reserved,
-- active + pending) it may grow to without asking; a put that fits its
-- namespace's allotment touches that namespace's row only.
--
-- allot_key names the tenant and the limits the allotment was drawn
-- under; an allotment of another tenant or of other limits (the config
-- moved the namespace or changed the quota) counts for nothing. A put
-- that does not fit draws a new allotment in a transaction that locks
-- the tenant row first and admits the put in the same commit; it takes
-- back the unused allotments of the tenant's other namespaces when the
-- budget is short, so a put is refused exactly when the tenant's usage
-- would pass its limit, as before. The sum over a tenant's namespaces of
-- the larger of allotment and usage never passes the tenant's limit, so
-- neither does its usage.
ALTER TABLE namespaces ADD COLUMN allot_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE namespaces ADD COLUMN allot_claims BIGINT NOT NULL DEFAULT 0;
ALTER TABLE namespaces ADD COLUMN allot_key TEXT NOT NULL DEFAULT '';
