package server

import (
	"context"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// Dead letters (ADR 0055, ADR 0076): admin routes that list and retry
// the blobs the sweeper parked after sweeper.max_attempts failed object
// deletes.
// With auth on, a key sees and retries only the dead letters of its
// tenant's namespaces, or of its one namespace (authorize checks what
// the request names; scopeDeadLetters narrows what it lists).

// scopeDeadLetters reads the query of a listing and narrows it to what
// the request's key covers: its tenant, and its namespace when it is
// limited to one. authorize has already refused a tenant or namespace
// parameter outside the key's reach.
func (s *Server) scopeDeadLetters(r *http.Request) (claimcheck.DeadLetterQuery, error) {
	q, err := api.ParseDeadLetterQuery(r.URL.Query())
	if err != nil {
		return q, err
	}
	if key, ok := KeyFrom(r.Context()); ok {
		q.Tenant = key.Tenant
		if key.Namespace != "" {
			q.Namespace = key.Namespace
		}
	}
	return q, nil
}

// listDeadLetters answers GET /v1/dead-letters: a page.
func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) error {
	return s.deadLetterPage(w, r, claimcheck.Admin.DeadLetters)
}

// retryDeadLetters answers POST /v1/dead-letters/retry: it retries the
// page the listing with the same parameters would answer, at most
// claimcheck.MaxDeadLetterPage, and answers those it took back with the
// next page's after.
func (s *Server) retryDeadLetters(w http.ResponseWriter, r *http.Request) error {
	return s.deadLetterPage(w, r, claimcheck.Admin.RetryDeadLetters)
}

// getDeadLetter answers GET /v1/dead-letters/{id}.
func (s *Server) getDeadLetter(w http.ResponseWriter, r *http.Request) error {
	return s.oneDeadLetter(w, r, claimcheck.Admin.DeadLetter)
}

// retryDeadLetter answers POST /v1/dead-letters/{id}/retry with the dead
// letter as it was parked.
func (s *Server) retryDeadLetter(w http.ResponseWriter, r *http.Request) error {
	return s.oneDeadLetter(w, r, claimcheck.Admin.RetryDeadLetter)
}

// deadLetterPage answers a page route with call's page of the request's
// (scoped) query.
func (s *Server) deadLetterPage(w http.ResponseWriter, r *http.Request, call func(claimcheck.Admin, context.Context, claimcheck.DeadLetterQuery) (claimcheck.DeadLetterPage, error)) error {
	q, err := s.scopeDeadLetters(r)
	if err != nil {
		return err
	}
	page, err := call(s.claims, r.Context(), q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// oneDeadLetter answers a route about the dead letter {id} with call's
// answer.
func (s *Server) oneDeadLetter(w http.ResponseWriter, r *http.Request, call func(claimcheck.Admin, context.Context, string) (claimcheck.DeadLetter, error)) error {
	id := r.PathValue("id")
	if !claimcheck.ValidBlobID(id) {
		return invalidf("dead letter id %q is malformed: want a blob id, b_ followed by 22 URL-safe base64 characters", clip(id))
	}
	d, err := call(s.claims, r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}
