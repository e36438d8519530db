package claimcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/claimcheck/claimcheck/meta"
)

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

// tenantQuota is the tenant quota the metadata store checks for a put
// into a namespace with policy pol.
func (s *Store) tenantQuota(pol Policy) meta.TenantQuota {
	t := s.tenants[pol.Tenant]
	return meta.TenantQuota{Tenant: pol.Tenant, Bytes: int64(t.Quota.Bytes), Claims: t.Quota.Claims}
}

// syncTenants records the configured tenant of every namespace that has
// a row, at start: a namespace the config moved to another tenant counts
// for the new tenant at once, with all its usage, not only after its
// next put.
func (s *Store) syncTenants(ctx context.Context) error {
	byNS := make(map[string]string, len(s.policies))
	for name, p := range s.policies {
		byNS[name] = p.Tenant
	}
	others := ""
	if s.defaults != nil {
		others = s.defaults.Tenant
	}
	if err := s.meta.SetTenants(ctx, byNS, others); err != nil {
		return fmt.Errorf("record namespace tenants: %w", err)
	}
	return nil
}

// Tenants returns every tenant that is declared or owns a namespace, with
// its quota and usage, ordered by name.
func (s *Store) Tenants(ctx context.Context) ([]TenantInfo, error) {
	usage, err := s.meta.Tenants(ctx)
	if err != nil {
		return nil, metaErr("list tenants", err)
	}
	seen := make(map[string]bool, len(usage))
	var out []TenantInfo
	for _, u := range usage {
		seen[u.Name] = true
		out = append(out, TenantInfo{Name: u.Name, Limits: s.tenants[u.Name].Quota, Namespaces: u.Namespaces,
			Usage: NamespaceUsage{UsedBytes: u.UsedBytes, ReservedBytes: u.ReservedBytes, ActiveClaims: u.ActiveClaims, PendingClaims: u.PendingClaims}})
	}
	for name, t := range s.tenants {
		if !seen[name] {
			out = append(out, TenantInfo{Name: name, Limits: t.Quota})
		}
	}
	slices.SortFunc(out, func(a, b TenantInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
