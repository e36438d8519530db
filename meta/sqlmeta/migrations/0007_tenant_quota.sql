-- Per-tenant quota. A namespace row records the tenant it belongs to
-- (set by every put from the config; 'default' for rows older than
-- tenants). A tenant's usage is the sum over its namespaces, so moving a
-- namespace to another tenant moves its usage with it and there is no
-- second counter that could drift. The tenants table only holds one row
-- per tenant to lock: admissions against a tenant quota serialise on it
-- (PostgreSQL), so concurrent puts in two namespaces of one tenant cannot
-- both fit into the last free bytes.

ALTER TABLE namespaces ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';

CREATE INDEX namespaces_tenant ON namespaces (tenant);

CREATE TABLE tenants (
    name TEXT PRIMARY KEY
);
