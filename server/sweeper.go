package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/server/api"
)

// sweeperStatus answers GET /v1/sweeper: the oldest due time, the
// sweeper's lag behind it and the due backlog counted up to a bound, the
// console's overview figures (bounded reads of the due indexes, never a
// scan of the backlog), with the due claims of that read per namespace
// the key covers.
func (s *Server) sweeperStatus(w http.ResponseWriter, r *http.Request) error {
	oldest, err := s.claims.OldestDue(r.Context())
	if err != nil {
		return err
	}
	due, bound, byNamespace, capped, err := s.claims.DueBacklog(r.Context())
	if err != nil {
		return err
	}
	visible, err := s.visibleDue(r.Context(), byNamespace)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	st := api.SweeperStatus{Now: now, Due: due, DueBound: bound, DueByNamespace: visible, DueByNamespaceCapped: capped}
	if !oldest.IsZero() {
		o := oldest.UTC()
		st.OldestDue = &o
		if o.Before(now) {
			st.LagSeconds = now.Sub(o).Seconds()
		}
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// visibleDue keeps the due counts of the namespaces the request's key
// covers (all of them when auth is off), like visibleNamespaces: a
// tenant never learns another's namespace names or their backlog. A
// namespace no longer configured has no tenant to check against and is
// left out for keyed requests.
func (s *Server) visibleDue(ctx context.Context, byNamespace map[string]int64) (map[string]int64, error) {
	key, ok := KeyFrom(ctx)
	if !ok {
		return byNamespace, nil
	}
	out := make(map[string]int64, len(byNamespace))
	for ns, n := range byNamespace {
		pol, err := s.claims.Policy(ctx, ns)
		if errors.Is(err, claimcheck.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if key.Covers(pol.Tenant, ns) {
			out[ns] = n
		}
	}
	return out, nil
}
