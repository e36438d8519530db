package meta

import "context"

// TenantQuota is the quota of the tenant a namespace belongs to. The
// operations that add to a namespace's usage (CreatePending, Commit when
// the payload outgrows its reservation, CommitExisting) check it in the
// same transaction as the namespace's own quota: an operation is refused
// exactly when the usage summed over all the tenant's namespaces would
// pass a limit. (A store may admit most of them from a share of the
// quota the namespace holds, without reading the other namespaces: ADR
// 0264.) They also record Tenant as the namespace's tenant, so a
// namespace the config moved to another tenant counts for the new one
// from its next put on.
type TenantQuota struct {
	// Tenant owns the namespace; "" checks nothing and leaves the
	// namespace's recorded tenant as it is.
	Tenant string
	Bytes  int64 // 0 = unlimited
	Claims int64 // 0 = unlimited
}

// TenantUsage is a tenant's usage: the sums over the namespaces recorded
// as its own.
type TenantUsage struct {
	Name          string
	Namespaces    int64
	UsedBytes     int64
	ReservedBytes int64
	ActiveClaims  int64
	PendingClaims int64
	// FinishedClaims sums the namespaces' finished counters (history,
	// not quota).
	FinishedClaims int64
}

// TenantStore records which tenant owns each namespace and reads tenant
// usage.
type TenantStore interface {
	// Tenants returns the usage of every tenant that owns a namespace
	// row, ordered by name.
	Tenants(ctx context.Context) ([]TenantUsage, error)

	// SetTenants records the tenant of every namespace row, in one
	// transaction: byNamespace[name] where the map has the name, else
	// others (unless others is ""). The engine calls it at start, so a
	// namespace the config moved to another tenant counts for the new
	// one at once, with all its usage.
	SetTenants(ctx context.Context, byNamespace map[string]string, others string) error
}
