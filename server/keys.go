package server

import (
	"fmt"
	"io"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/auth"
	"github.com/claimcheck/claimcheck/server/api"
)

// Failed authentications per client address: a burst, then one a second.
// Over it, the guard (limits.go) answers failures with rate_limited, and
// requests without a well-formed token before any lookup; a valid key is
// never refused for them.
const (
	authFailureRate  = 1.0
	authFailureBurst = 20
)

// KeyInfo is the wire form of k (the HTTP API's and `claimcheck keys --json`'s).
func KeyInfo(k auth.Key) api.KeyInfo {
	return api.KeyInfo{ID: k.ID, Tenant: k.Tenant, Role: string(k.Role), Namespace: k.Namespace,
		Name: k.Name, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}

// DefaultMaxAPIKeysPerTenant is http.max_api_keys_per_tenant in
// `claimcheck serve` when unset: a tenant's admin keys cannot grow its
// keys (and GET /v1/keys) without bound (ADR 0270).
const DefaultMaxAPIKeysPerTenant = 1000

// createKey answers POST /v1/keys: a new key in the caller's tenant.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	admin, _ := KeyFrom(r.Context())
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		return invalidf("key request body: %v", err)
	}
	var req api.CreateKeyRequest
	if err := api.DecodeJSON(b, `key request body (want {"role":"producer|consumer|admin","namespace":"…","name":"…"})`, &req); err != nil {
		return err
	}
	role, err := auth.ParseRole(req.Role)
	if err != nil {
		return err
	}
	if req.Namespace != "" {
		// Only a namespace of the admin's own tenant; another tenant's is
		// not_found, as everywhere.
		if err := claimcheck.ValidateNamespace(req.Namespace); err != nil {
			return err
		}
		pol, err := s.claims.Policy(r.Context(), req.Namespace)
		if err != nil {
			return err
		}
		if pol.Tenant != admin.Tenant {
			return fmt.Errorf("%w: namespace %q", claimcheck.ErrNotFound, req.Namespace)
		}
	}
	k, token, err := s.auth.Create(r.Context(), auth.CreateParams{Tenant: admin.Tenant, Role: role, Namespace: req.Namespace, Name: req.Name,
		Limit: s.limits.MaxAPIKeysPerTenant, LimitKey: "http.max_api_keys_per_tenant"})
	if err != nil {
		return err
	}
	s.log.InfoContext(r.Context(), "API key created", "key", k.ID, "tenant", k.Tenant, "role", k.Role, "namespace", k.Namespace, "by", admin.ID)
	writeJSON(w, http.StatusCreated, api.CreatedKey{KeyInfo: KeyInfo(k), Token: token})
	return nil
}

// listKeys answers GET /v1/keys: the keys of the caller's tenant.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	admin, _ := KeyFrom(r.Context())
	cursor, limit, err := api.ParsePageQuery(r.URL.Query())
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = claimcheck.DefaultListLimit
	}
	ks, next, err := s.auth.Page(r.Context(), admin.Tenant, cursor, limit)
	if err != nil {
		return err
	}
	out := api.KeyList{Keys: make([]api.KeyInfo, len(ks)), Next: next}
	for i, k := range ks {
		out.Keys[i] = KeyInfo(k)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// revokeKey answers DELETE /v1/keys/{key}. A key of another tenant is
// not_found. The revoke holds from the next request on.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	admin, _ := KeyFrom(r.Context())
	k, err := s.auth.Revoke(r.Context(), r.PathValue("key"), admin.Tenant)
	if err != nil {
		return err
	}
	s.log.InfoContext(r.Context(), "API key revoked", "key", k.ID, "tenant", k.Tenant, "by", admin.ID)
	writeJSON(w, http.StatusOK, KeyInfo(k))
	return nil
}
