-- Administrative events of a tenant (ADR 0073): API keys created and
-- revoked, failed authentications with a key of the tenant. A key that is
-- not limited to one namespace has no namespace to file its events under,
-- so events carry the tenant they concern, and GET /v1/events reads them
-- through this index. Claim lifecycle events leave tenant empty: the
-- partial index skips them, so they pay nothing for it on insert.
ALTER TABLE events ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
CREATE INDEX events_tenant ON events (tenant, seq) WHERE tenant <> '';
