package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/meta"
)

// Namespace returns the policy, limits and usage of namespace ns.
func (s *Store) Namespace(ctx context.Context, ns string) (claimcheck.NamespaceInfo, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return claimcheck.NamespaceInfo{}, err
	}
	n, err := s.meta.Namespace(ctx, ns)
	if err != nil {
		return claimcheck.NamespaceInfo{}, metaErr("namespace "+ns, err)
	}
	tenants, err := s.tenantsByName(ctx)
	if err != nil {
		return claimcheck.NamespaceInfo{}, err
	}
	info, err := s.namespaceInfo(ctx, n, tenants)
	if err != nil {
		return claimcheck.NamespaceInfo{}, err
	}
	if info.Retired && info.Usage == (claimcheck.NamespaceUsage{}) {
		return claimcheck.NamespaceInfo{}, fmt.Errorf("namespace %s: %w: not configured (defaults are off) and holds no claims", ns, claimcheck.ErrNotFound)
	}
	return info, nil
}

// Namespaces returns every configured namespace and every namespace with
// a counter row (one that ever held a claim), ordered by name.
func (s *Store) Namespaces(ctx context.Context) ([]claimcheck.NamespaceInfo, error) {
	rows, err := s.meta.Namespaces(ctx)
	if err != nil {
		return nil, metaErr("list namespaces", err)
	}
	byName := make(map[string]meta.Namespace, len(rows)+len(s.policies))
	for name := range s.policies {
		byName[name] = meta.Namespace{Name: name}
	}
	for _, n := range rows {
		byName[n.Name] = n
	}
	tenants, err := s.tenantsByName(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]claimcheck.NamespaceInfo, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		info, err := s.namespaceInfo(ctx, byName[name], tenants)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func (s *Store) namespaceInfo(ctx context.Context, n meta.Namespace, tenants map[string]claimcheck.TenantInfo) (claimcheck.NamespaceInfo, error) {
	info := claimcheck.NamespaceInfo{Name: n.Name, Usage: claimcheck.NamespaceUsage{
		UsedBytes: n.UsedBytes, ReservedBytes: n.ReservedBytes,
		ActiveClaims: n.ActiveClaims, PendingClaims: n.PendingClaims,
		FinishedClaims: n.FinishedClaims,
	}}
	pol, err := s.Policy(ctx, n.Name)
	switch {
	case errors.Is(err, claimcheck.ErrNotFound):
		info.Retired = true
	case err != nil:
		return claimcheck.NamespaceInfo{}, err
	default:
		info.Policy, info.Limits = pol, pol.Quota
		t, ok := tenants[pol.Tenant]
		if !ok {
			t = claimcheck.TenantInfo{Name: pol.Tenant, Limits: s.tenants[pol.Tenant].Quota}
		}
		info.Tenant = &t
	}
	return info, nil
}

func (s *Store) tenantsByName(ctx context.Context) (map[string]claimcheck.TenantInfo, error) {
	list, err := s.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]claimcheck.TenantInfo, len(list))
	for _, t := range list {
		m[t.Name] = t
	}
	return m, nil
}
