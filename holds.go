package claimcheck

import (
	"context"
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

// Holder sets and lifts legal holds. *engine.Store and client.Client implement
// it; it is an admin operation (on the HTTP API, admin keys only).
type Holder interface {
	// SetHold puts the claim on hold; setting it again replaces the
	// reason. The claim must be active: a finished one answers a
	// *GoneError, a pending one ErrNotFound.
	SetHold(ctx context.Context, ref Ref, reason string) error
	// ClearHold lifts the claim's own hold. If no namespace hold keeps it
	// and its deadline has passed meanwhile, it is finished at once.
	// Lifting a hold that is not set is not an error.
	ClearHold(ctx context.Context, ref Ref) error
	// SetNamespaceHold puts every claim of ns, present and future, on
	// hold.
	SetNamespaceHold(ctx context.Context, ns, reason string) error
	// ClearNamespaceHold lifts the namespace hold; claims without a hold
	// of their own whose deadline has passed are finished at once.
	ClearNamespaceHold(ctx context.Context, ns string) error
	// NamespaceHold returns the namespace's hold, nil if none.
	NamespaceHold(ctx context.Context, ns string) (*Hold, error)
}
