package meta

import (
	"context"
	"errors"
	"time"

	"github.com/claimcheck/claimcheck"
)

// ErrHeld is returned when an operation would delete data that is under a
// legal hold (a claim hold or a namespace hold).
var ErrHeld = errors.New("meta: held")

// Hold is a legal hold on a claim or on a namespace.
type Hold struct {
	Reason string
	At     time.Time // when it was set
}

// ClaimHolds are the holds that keep one claim: its own and its
// namespace's. A nil field means no such hold.
type ClaimHolds struct {
	Claim     *Hold
	Namespace *Hold
}

// Held reports whether any hold keeps the claim.
func (h ClaimHolds) Held() bool { return h.Claim != nil || h.Namespace != nil }

// Audit events of legal holds (ADR 0070, "Administrative events"),
// appended by the HoldStore in the transaction that sets or lifts the
// hold, with the actor of the context. Reason is the hold's scope
// (HoldScopeClaim or HoldScopeNamespace) and Detail the hold's own
// free-text reason (for hold_cleared: the reason of the hold lifted). A
// claim hold's event names the claim, its blob and its namespace; a
// namespace hold's names the namespace only.
//
// Only changes are logged: setting a hold again with the same reason and
// lifting a hold that is not set log nothing; setting it again with
// another reason logs hold_set again.
const (
	EventHoldSet     = "hold_set"
	EventHoldCleared = "hold_cleared"
)

// Hold scopes: the Reason of hold events, and the scope the engine
// reports in Stat.
const (
	HoldScopeClaim     = claimcheck.HoldScopeClaim
	HoldScopeNamespace = claimcheck.HoldScopeNamespace
)

// HoldStore keeps legal holds (ADR 0065). A claim that is held, or whose
// namespace is held, is never finished until every hold on it is lifted:
// every finish (FinishClaim, FinishDueClaims, and so every expiry,
// release, read retention and explicit delete) compares and swaps on the
// absence of holds inside its own transaction, and such a finish simply
// does not happen (done=false, or left out of the page). Only active
// claims can be held: a pending claim has no content yet.
//
// Held claims are parked: out of the due index, so sweeps never read them
// again, with their due time and reason kept (reads and releases still
// lower it). A claim of a held namespace that became active after the
// hold was set is parked the first time a finish reaches it.
type HoldStore interface {
	// SetClaimHold puts an active claim on hold (setting it again only
	// replaces the reason). ErrNotFound if absent; ErrConflict if the
	// claim is not active, or is due at now and not parked (the caller
	// finishes it first, then decides).
	SetClaimHold(ctx context.Context, id, reason string, now time.Time) error

	// ClearClaimHold lifts the claim's own hold. If its namespace is not
	// held the claim is unparked, and finished at once (with its due
	// reason) if its due time has passed; finished reports that. Lifting
	// a hold that is not set changes nothing. ErrNotFound if absent.
	ClearClaimHold(ctx context.Context, id string, now time.Time) (res FinishResult, finished bool, err error)

	// SetNamespaceHold puts a namespace on hold (setting it again only
	// replaces the reason) and parks its active claims. It returns how
	// many claims it parked.
	SetNamespaceHold(ctx context.Context, ns, reason string, now time.Time) (parked int64, err error)

	// ClearNamespaceHold lifts the namespace hold, unparks the claims that
	// have no hold of their own and finishes those whose due time has
	// passed, in one transaction. Lifting a hold that is not set changes
	// nothing.
	ClearNamespaceHold(ctx context.Context, ns string, now time.Time) ([]FinishResult, error)

	// ClaimHolds returns the holds that keep the claim. ErrNotFound if
	// absent.
	ClaimHolds(ctx context.Context, id string) (ClaimHolds, error)

	// NamespaceHold returns the namespace's hold, nil if none.
	NamespaceHold(ctx context.Context, ns string) (*Hold, error)

	// HeldClaims counts the claims of ns that have a hold of their own.
	HeldClaims(ctx context.Context, ns string) (int64, error)
}
