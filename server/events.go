package server

import (
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// claimEvents answers GET /v1/claims/{id}/events: a page of the claim's
// audit trail.
func (s *Server) claimEvents(w http.ResponseWriter, r *http.Request) error {
	ref, err := claimRef(r)
	if err != nil {
		return err
	}
	q, err := api.ParseEventQuery(r.URL.Query())
	if err != nil {
		return err
	}
	es, err := s.claims.ClaimEvents(r.Context(), ref, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventsPage(es, q))
	return nil
}

// namespaceEvents answers GET /v1/namespaces/{ns}/events.
func (s *Server) namespaceEvents(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	q, err := api.ParseEventQuery(r.URL.Query())
	if err != nil {
		return err
	}
	es, err := s.claims.NamespaceEvents(r.Context(), ns, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventsPage(es, q))
	return nil
}

// tenantEvents answers GET /v1/events: a page of a tenant's
// administrative events (API keys created and revoked, failed
// authentications with its keys). With API keys the tenant is the
// caller's; naming another is not_found, like another tenant's
// namespace.
func (s *Server) tenantEvents(w http.ResponseWriter, r *http.Request) error {
	q, err := api.ParseEventQuery(r.URL.Query())
	if err != nil {
		return err
	}
	tenant, err := requestTenant(r)
	if err != nil {
		return err
	}
	es, err := s.claims.TenantEvents(r.Context(), tenant, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventsPage(es, q))
	return nil
}

// eventsPage says where the next page starts when this one is full.
func eventsPage(es []claimcheck.Event, q claimcheck.EventQuery) api.EventsPage {
	p := api.EventsPage{Events: es}
	if p.Events == nil {
		p.Events = []claimcheck.Event{}
	}
	limit := q.Limit
	if limit == 0 {
		limit = claimcheck.MaxEventPage
	}
	if len(es) >= limit && len(es) > 0 {
		p.Next = es[len(es)-1].Seq
	}
	return p
}
