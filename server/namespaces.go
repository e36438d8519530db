package server

import (
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// namespaceInfo answers GET /v1/namespaces/{ns}: the policy, the quota
// limits and the usage.
func (s *Server) namespaceInfo(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	info, err := s.claims.Namespace(r.Context(), ns)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// namespaces answers GET /v1/namespaces: every namespace with its policy,
// limits and usage.
func (s *Server) namespaces(w http.ResponseWriter, r *http.Request) error {
	list, err := s.claims.Namespaces(r.Context())
	if err != nil {
		return err
	}
	list = s.visibleNamespaces(r.Context(), list) // auth: the key's own (auth.go)
	if list == nil {
		list = []claimcheck.NamespaceInfo{}
	}
	writeJSON(w, http.StatusOK, api.NamespaceList{Namespaces: list})
	return nil
}
