package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/meta"
)

// tenantQuota is the tenant quota the metadata store checks for a put
// into a namespace with policy pol.
func (s *Store) tenantQuota(pol claimcheck.Policy) meta.TenantQuota {
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
func (s *Store) Tenants(ctx context.Context) ([]claimcheck.TenantInfo, error) {
	usage, err := s.meta.Tenants(ctx)
	if err != nil {
		return nil, metaErr("list tenants", err)
	}
	seen := make(map[string]bool, len(usage))
	var out []claimcheck.TenantInfo
	for _, u := range usage {
		seen[u.Name] = true
		out = append(out, claimcheck.TenantInfo{Name: u.Name, Limits: s.tenants[u.Name].Quota, Namespaces: u.Namespaces,
			Usage: claimcheck.NamespaceUsage{UsedBytes: u.UsedBytes, ReservedBytes: u.ReservedBytes, ActiveClaims: u.ActiveClaims, PendingClaims: u.PendingClaims,
				FinishedClaims: u.FinishedClaims}})
	}
	for name, t := range s.tenants {
		if !seen[name] {
			out = append(out, claimcheck.TenantInfo{Name: name, Limits: t.Quota})
		}
	}
	slices.SortFunc(out, func(a, b claimcheck.TenantInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
