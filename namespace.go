package claimcheck

// NamespaceInfo is what an operator sees of a namespace: its policy, its
// quota limits and what it uses now. GET /v1/namespaces/{ns} answers it
// and `claimcheck ns ls|show` prints it.
type NamespaceInfo struct {
	Name   string `json:"name"`
	Policy Policy `json:"policy"`
	// Limits is the namespace's quota (the policy's quota; zero means
	// unlimited).
	Limits Quota `json:"limits"`
	// Usage is counted by the same transactions that create, commit and
	// finish claims, so it is exact, not an estimate.
	Usage NamespaceUsage `json:"usage"`
	// Retired is set for a namespace that still holds claims but that
	// the config no longer names (and defaults are off): its claims live
	// out their deadlines, new puts are refused, Policy is empty.
	Retired bool `json:"retired,omitempty"`
	// Tenant is the quota and usage of the tenant the namespace belongs
	// to, summed over all its namespaces: a put must fit both.
	Tenant *TenantInfo `json:"tenant,omitempty"`
}

// NamespaceUsage is a namespace's quota consumption.
type NamespaceUsage struct {
	// UsedBytes is the sum of the original sizes of the active claims.
	UsedBytes int64 `json:"used_bytes"`
	// ReservedBytes is held by pending claims: puts being written and
	// direct uploads not yet confirmed. It turns into usage on commit
	// and is given back, once, when a pending claim is reaped.
	ReservedBytes int64 `json:"reserved_bytes"`
	ActiveClaims  int64 `json:"active_claims"`
	PendingClaims int64 `json:"pending_claims"`
}
