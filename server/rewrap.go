package server

import (
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// rewrapNamespaceKey is master key rotation for one namespace (rewrap.go,
// ADR 0075): POST /v1/namespaces/{ns}/key/rewrap[?dry_run=true]. It
// rewraps the namespace's live data key with the server's current master
// key and answers the report (200), failures included: a key that cannot
// be rewrapped is a finding of the run, not a failed request. The route is
// per namespace so that tenant admins stay inside their tenant; the whole
// store is rewrapped offline with `claimcheck rewrap-keys`.
func (s *Server) rewrapNamespaceKey(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	dryRun, err := api.ParseRewrapQuery(r.URL.Query())
	if err != nil {
		return err
	}
	rep, err := s.claims.RewrapDataKeys(r.Context(), claimcheck.RewrapOptions{Namespace: ns, DryRun: dryRun})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
