package claimcheck

// TenantInfo is a tenant's quota and its usage over all its namespaces.
type TenantInfo struct {
	Name string `json:"name"`
	// Limits is the tenant's quota from the tenants section (zero:
	// unlimited). It is checked in the same transaction as the
	// namespace's own quota, on every reservation and commit.
	Limits Quota `json:"limits"`
	// Usage sums the usage of the tenant's namespaces.
	Usage      NamespaceUsage `json:"usage"`
	Namespaces int64          `json:"namespaces"`
}
