package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/claimcheck/claimcheck/meta"
)

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

// NamespaceReader reports namespace limits and usage. Both *Store and
// client.Client implement it; the server answers GET /v1/namespaces with
// it when its Claims does.
type NamespaceReader interface {
	// Namespace returns one namespace. ErrNotFound when the namespace
	// is neither configured (nor covered by the defaults) nor holds
	// claims.
	Namespace(ctx context.Context, ns string) (NamespaceInfo, error)
	// Namespaces returns every configured namespace and every namespace
	// that holds or held claims, ordered by name.
	Namespaces(ctx context.Context) ([]NamespaceInfo, error)
}

var _ NamespaceReader = (*Store)(nil)

// Namespace returns the policy, limits and usage of namespace ns.
func (s *Store) Namespace(ctx context.Context, ns string) (NamespaceInfo, error) {
	if err := ValidateNamespace(ns); err != nil {
		return NamespaceInfo{}, err
	}
	n, err := s.meta.Namespace(ctx, ns)
	if err != nil {
		return NamespaceInfo{}, metaErr("namespace "+ns, err)
	}
	tenants, err := s.tenantsByName(ctx)
	if err != nil {
		return NamespaceInfo{}, err
	}
	info, err := s.namespaceInfo(ctx, n, tenants)
	if err != nil {
		return NamespaceInfo{}, err
	}
	if info.Retired && info.Usage == (NamespaceUsage{}) {
		return NamespaceInfo{}, fmt.Errorf("namespace %s: %w: not configured (defaults are off) and holds no claims", ns, ErrNotFound)
	}
	return info, nil
}

// Namespaces returns every configured namespace and every namespace with
// a counter row (one that ever held a claim), ordered by name.
func (s *Store) Namespaces(ctx context.Context) ([]NamespaceInfo, error) {
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
	out := make([]NamespaceInfo, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		info, err := s.namespaceInfo(ctx, byName[name], tenants)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func (s *Store) namespaceInfo(ctx context.Context, n meta.Namespace, tenants map[string]TenantInfo) (NamespaceInfo, error) {
	info := NamespaceInfo{Name: n.Name, Usage: NamespaceUsage{
		UsedBytes: n.UsedBytes, ReservedBytes: n.ReservedBytes,
		ActiveClaims: n.ActiveClaims, PendingClaims: n.PendingClaims,
	}}
	pol, err := s.Policy(ctx, n.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		info.Retired = true
	case err != nil:
		return NamespaceInfo{}, err
	default:
		info.Policy, info.Limits = pol, pol.Quota
		t, ok := tenants[pol.Tenant]
		if !ok {
			t = TenantInfo{Name: pol.Tenant, Limits: s.tenants[pol.Tenant].Quota}
		}
		info.Tenant = &t
	}
	return info, nil
}

func (s *Store) tenantsByName(ctx context.Context) (map[string]TenantInfo, error) {
	list, err := s.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]TenantInfo, len(list))
	for _, t := range list {
		m[t.Name] = t
	}
	return m, nil
}
