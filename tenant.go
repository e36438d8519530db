package claimcheck

import "strconv"

// DefaultTenant owns every namespace whose policy names no tenant. It
// always exists, declared or not, so a config without a tenants section
// (the embedded single-user default) has exactly one tenant.
const DefaultTenant = "default"

// TenantPolicy is a tenant's entry in the config's tenants section. A
// tenant owns API keys and namespaces and is the unit of isolation: a key
// of one tenant never sees another tenant's claims.
//
//	tenants:
//	  acme: { quota: { bytes: 1TiB, claims: 10000000 } }
//	namespaces:
//	  video-processing: { tenant: acme }
type TenantPolicy struct {
	// Quota limits the tenant's namespaces together. Zero means unlimited.
	Quota Quota `yaml:"quota" json:"quota"`
}

// Validate checks a tenant policy; the error names the field.
func (t TenantPolicy) Validate() error {
	if t.Quota.Bytes < 0 {
		return fieldErr("quota.bytes", t.Quota.Bytes.String(), "must not be negative")
	}
	if t.Quota.Claims < 0 {
		return fieldErr("quota.claims", strconv.FormatInt(t.Quota.Claims, 10), "must not be negative")
	}
	return nil
}

// ValidateTenant checks a tenant name. Tenant names follow the namespace
// rules (lowercase letters, digits, '-' and '_', at most 24 characters),
// so they are safe in logs, metrics labels and key prefixes alike.
func ValidateTenant(name string) error {
	switch {
	case name == "":
		return invalidf("tenant: empty name")
	case len(name) > MaxNamespaceLen:
		return invalidf("tenant %q: longer than %d characters", name, MaxNamespaceLen)
	case !validName(name):
		return invalidf("tenant %q: use lowercase letters, digits, '-' and '_', starting and ending with a letter or digit", name)
	}
	return nil
}
