package server

import (
	"net/http"
	"time"

	"github.com/claimcheck/claimcheck/server/api"
)

// sweeperStatus answers GET /v1/sweeper: the oldest due time, the
// sweeper's lag behind it and the due backlog counted up to a bound, the
// console's overview figures (bounded reads of the due indexes, never a
// scan of the backlog).
func (s *Server) sweeperStatus(w http.ResponseWriter, r *http.Request) error {
	oldest, err := s.claims.OldestDue(r.Context())
	if err != nil {
		return err
	}
	due, bound, err := s.claims.DueBacklog(r.Context())
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	st := api.SweeperStatus{Now: now, Due: due, DueBound: bound}
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
