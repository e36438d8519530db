package api

import "time"

// SweeperStatus is the answer of GET /v1/sweeper: how far the background
// sweeper is behind, from the due index the sweeper itself reads. The
// oldest due time and Due are store-wide figures, like /readyz: they name
// no claim, namespace or tenant; DueByNamespace names only the
// namespaces the caller's key covers.
type SweeperStatus struct {
	// Now is the server's clock when it answered.
	Now time.Time `json:"now"`
	// OldestDue is the earliest due time of any claim or blob; absent
	// when nothing is ever due.
	OldestDue *time.Time `json:"oldest_due,omitempty"`
	// LagSeconds is how long the oldest due item has waited (0 when
	// nothing is overdue), the value of claimcheck_sweeper_lag_seconds
	// at the sweeper's last tick.
	LagSeconds float64 `json:"lag_seconds"`
	// Due is how many claims (not held) and blobs are due now, counted
	// up to DueBound: at DueBound there may be more.
	Due      int64 `json:"due"`
	DueBound int64 `json:"due_bound"`
	// DueByNamespace counts the due claims among the first DueBound of
	// the claims' due index (earliest first) per namespace, for the
	// namespaces the key covers only; a namespace with nothing due there
	// is absent.
	DueByNamespace map[string]int64 `json:"due_by_namespace"`
	// DueByNamespaceCapped says that read stopped at DueBound: a
	// namespace may have more due claims than DueByNamespace says.
	DueByNamespaceCapped bool `json:"due_by_namespace_capped"`
}
