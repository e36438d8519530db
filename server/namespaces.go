package server

import (
	"net/http"
	"slices"
	"strings"

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

// namespaces answers GET /v1/namespaces: a page of the namespaces the
// caller may see, by name, each with its policy, limits and usage;
// `cursor` (the name the page before ended with) and `limit`, as the
// other listings (ADR 0270).
func (s *Server) namespaces(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := api.ParsePageQuery(r.URL.Query())
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = claimcheck.DefaultListLimit
	}
	list, err := s.claims.Namespaces(r.Context())
	if err != nil {
		return err
	}
	list = s.visibleNamespaces(r.Context(), list) // auth: the key's own (auth.go)
	slices.SortFunc(list, func(a, b claimcheck.NamespaceInfo) int { return strings.Compare(a.Name, b.Name) })
	start, _ := slices.BinarySearchFunc(list, cursor, func(n claimcheck.NamespaceInfo, c string) int {
		if n.Name <= c {
			return -1
		}
		return 1
	})
	page := api.NamespaceList{Namespaces: list[start:]}
	if len(page.Namespaces) > limit {
		page.Namespaces = page.Namespaces[:limit]
		page.Next = page.Namespaces[limit-1].Name
	}
	if page.Namespaces == nil {
		page.Namespaces = []claimcheck.NamespaceInfo{}
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}
