package server

import (
	"net/http"
	"time"

	"github.com/claimcheck/claimcheck/server/api"
)

// sweeperStatus answers GET /v1/sweeper: the oldest due time and the
// sweeper's lag behind it, the console's overview figure (one read of the
// due index per request, never a count of the backlog).
func (s *Server) sweeperStatus(w http.ResponseWriter, r *http.Request) error {
	oldest, err := s.claims.OldestDue(r.Context())
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	st := api.SweeperStatus{Now: now}
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
