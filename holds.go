package claimcheck

import (
	"errors"
	"time"
)

// ErrHeld: the operation would delete data under a legal hold (the
// claim's own hold or its namespace's). Lift the hold first. On the wire
// it is the code "held" (409).
var ErrHeld = errors.New("held")

// Hold scopes.
const (
	HoldScopeClaim     = "claim"
	HoldScopeNamespace = "namespace"
)

// Hold is a legal hold that keeps a claim: while any hold is set, no
// expiry, release, delete-after-read, explicit delete or garbage
// collection deletes it or its bytes. ADR 0065.
type Hold struct {
	Scope  string    `json:"scope"` // HoldScopeClaim or HoldScopeNamespace
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}
