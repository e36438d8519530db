package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// Dead letters (ADR 0055, ADR 0076): admin routes that list and retry
// the blobs the sweeper parked after sweeper.max_attempts failed object
// deletes. They need a store that implements claimcheck.DeadLetterQueue.
// With auth on, a key sees and retries only the dead letters of its
// tenant's namespaces, or of its one namespace (authorize checks what
// the request names; scopeDeadLetters narrows what it lists).

func (s *Server) deadLetterQueue() (claimcheck.DeadLetterQueue, error) {
	dq, ok := s.claims.(claimcheck.DeadLetterQueue)
	if !ok {
		return nil, fmt.Errorf("%w: this server's store keeps no dead letters", claimcheck.ErrUnavailable)
	}
	return dq, nil
}

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

// deadLetterPage makes the handler of GET /v1/dead-letters (call is
// DeadLetterQueue.DeadLetters: a page) and of POST /v1/dead-letters/retry
// (RetryDeadLetters: it retries the page the listing with the same
// parameters would answer, at most claimcheck.MaxDeadLetterPage, and
// answers those it took back with the next page's after).
func (s *Server) deadLetterPage(call func(claimcheck.DeadLetterQueue, context.Context, claimcheck.DeadLetterQuery) (claimcheck.DeadLetterPage, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		dq, err := s.deadLetterQueue()
		if err != nil {
			return err
		}
		q, err := s.scopeDeadLetters(r)
		if err != nil {
			return err
		}
		page, err := call(dq, r.Context(), q)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, page)
		return nil
	}
}

// oneDeadLetter makes the handler of GET /v1/dead-letters/{id} (call is
// DeadLetterQueue.DeadLetter) and of POST /v1/dead-letters/{id}/retry
// (RetryDeadLetter, answering the dead letter as it was parked).
func (s *Server) oneDeadLetter(call func(claimcheck.DeadLetterQueue, context.Context, string) (claimcheck.DeadLetter, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		if !claimcheck.ValidBlobID(id) {
			return invalidf("dead letter id %q is malformed: want a blob id, b_ followed by 22 URL-safe base64 characters", clip(id))
		}
		dq, err := s.deadLetterQueue()
		if err != nil {
			return err
		}
		d, err := call(dq, r.Context(), id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, d)
		return nil
	}
}
