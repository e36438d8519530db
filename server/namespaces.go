package server

import (
	"fmt"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// namespaceInfo answers GET /v1/namespaces/{ns}: the policy, and when the
// store can report them (claimcheck.NamespaceReader, as the embedded
// Store does) the quota limits and usage beside it.
func (s *Server) namespaceInfo(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return err
	}
	if nr, ok := s.claims.(claimcheck.NamespaceReader); ok {
		info, err := nr.Namespace(r.Context(), ns)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, info)
		return nil
	}
	pol, err := s.claims.Policy(r.Context(), ns)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.NamespaceInfo{Name: ns, Policy: pol, Limits: pol.Quota})
	return nil
}

// namespaces answers GET /v1/namespaces: every namespace with its policy,
// limits and usage.
func (s *Server) namespaces(w http.ResponseWriter, r *http.Request) error {
	nr, ok := s.claims.(claimcheck.NamespaceReader)
	if !ok {
		return fmt.Errorf("%w: this server's store cannot list namespaces", claimcheck.ErrNotFound)
	}
	list, err := nr.Namespaces(r.Context())
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
