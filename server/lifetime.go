package server

import (
	"io"
	"net/http"

	"github.com/claimcheck/claimcheck/server/api"
)

// Listing and extending claims (ADR 0100, ADR 0101). The route table
// gives both their permission (producer and admin keys) and their tenant
// check: the listing names its namespace in the path, so a key of another
// tenant gets 404 before the store is asked, and an extension names a
// claim, checked like every claim route.

func (s *Server) listClaims(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	opts, err := api.ParseListQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := s.claims.List(r.Context(), ns, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (s *Server) extendClaim(w http.ResponseWriter, r *http.Request) error {
	ref, err := claimRef(r)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		return invalidf("extend body: %v", err)
	}
	opts, err := api.ParseExtendRequest(b)
	if err != nil {
		return err
	}
	info, err := s.claims.Extend(r.Context(), ref, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}
