package engine

import (
	"fmt"

	"github.com/claimcheck/claimcheck"
)

// Per-tenant limits on the objects a tenant makes by name (ADR 0270): a
// tenant's admin key must not be able to grow the server's idle work or
// its listings without bound. Bytes and claims have their quota
// (tenantquota.go); these bound the rest.

// DefaultMaxSubscriptionsPerTenant is tenant_limits.subscriptions when
// unset.
const DefaultMaxSubscriptionsPerTenant = 100

// TenantLimits is the tenant_limits section of the config:
//
//	tenant_limits:
//	  subscriptions: 100   # subscriptions made over the API, per tenant
//
// 0 is the default; a negative value switches the limit off.
type TenantLimits struct {
	// Subscriptions bounds the subscriptions a tenant makes over the API
	// (default 100). The operator's configured targets do not count.
	Subscriptions int `yaml:"subscriptions"`
}

// WithDefaults fills in the zero fields; a negative one becomes 0, no
// limit.
func (l TenantLimits) WithDefaults() TenantLimits {
	switch {
	case l.Subscriptions == 0:
		l.Subscriptions = DefaultMaxSubscriptionsPerTenant
	case l.Subscriptions < 0:
		l.Subscriptions = 0
	}
	return l
}

// limitErr is the answer to a tenant at its limit (the metadata store's
// meta.ErrLimitReached): quota_exceeded (403, like a full quota), naming
// the limit and its config key.
func limitErr(what string, limit int, key string) error {
	return fmt.Errorf("%w: the tenant has %d %s, its limit (%s)", claimcheck.ErrQuotaExceeded, limit, what, key)
}
