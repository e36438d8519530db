package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// ErrHeld: the operation would delete data under a legal hold (the
// claim's own hold or its namespace's). Lift the hold first. On the wire
// it is the code "held" (409).
var ErrHeld = errors.New("held")

// Hold scopes.
const (
	HoldScopeClaim     = meta.HoldScopeClaim
	HoldScopeNamespace = meta.HoldScopeNamespace
)

// maxHoldReason bounds a hold's reason (a case number, a ticket link).
const maxHoldReason = 512

// Hold is a legal hold that keeps a claim: while any hold is set, no
// expiry, release, delete-after-read, explicit delete or garbage
// collection deletes it or its bytes. ADR 0065.
type Hold struct {
	Scope  string    `json:"scope"` // HoldScopeClaim or HoldScopeNamespace
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}

// Holder sets and lifts legal holds. *Store and client.Client implement
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

var _ Holder = (*Store)(nil)

// SetHold puts a claim on hold.
func (s *Store) SetHold(ctx context.Context, ref Ref, reason string) error {
	if len(reason) > maxHoldReason {
		return fmt.Errorf("hold: %w", invalidf("reason: longer than %d characters", maxHoldReason))
	}
	if err := s.reads.sync(ctx); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		// load finishes an overdue claim first: a hold cannot revive it.
		c, err := s.load(ctx, "hold", ref, false)
		if err != nil {
			return err
		}
		if c.State == meta.ClaimPending {
			return fmt.Errorf("hold %s: %w: the claim is still being written", c.ID, ErrNotFound)
		}
		err = s.meta.SetClaimHold(ctx, c.ID, reason, s.clock.Now())
		if err == nil {
			s.log.Info("legal hold set", "claim", c.ID, "namespace", c.Namespace, "reason", reason, "actor", ActorFrom(ctx))
			return nil
		}
		if !errors.Is(err, meta.ErrConflict) || attempt == maxCASRetries {
			return metaErr("hold "+c.ID, err)
		}
	}
}

// ClearHold lifts a claim's own hold.
func (s *Store) ClearHold(ctx context.Context, ref Ref) error {
	c, err := s.load(ctx, "clear hold", ref, true)
	if err != nil {
		return err
	}
	res, finished, err := s.meta.ClearClaimHold(ctx, c.ID, s.clock.Now())
	if err != nil {
		return metaErr("clear hold "+c.ID, err)
	}
	if finished {
		s.sweepMetrics.ObserveFinished(res)
	}
	s.log.Info("legal hold lifted", "claim", c.ID, "namespace", c.Namespace, "finished", finished, "actor", ActorFrom(ctx))
	return nil
}

// SetNamespaceHold puts a namespace on hold.
func (s *Store) SetNamespaceHold(ctx context.Context, ns, reason string) error {
	if _, err := s.Policy(ctx, ns); err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	if len(reason) > maxHoldReason {
		return fmt.Errorf("hold: %w", invalidf("reason: longer than %d characters", maxHoldReason))
	}
	parked, err := s.meta.SetNamespaceHold(ctx, ns, reason, s.clock.Now())
	if err != nil {
		return metaErr("hold namespace "+ns, err)
	}
	s.log.Info("legal hold set", "namespace", ns, "reason", reason, "claims", parked, "actor", ActorFrom(ctx))
	return nil
}

// ClearNamespaceHold lifts a namespace hold.
func (s *Store) ClearNamespaceHold(ctx context.Context, ns string) error {
	if err := ValidateNamespace(ns); err != nil {
		return fmt.Errorf("clear hold: %w", err)
	}
	rs, err := s.meta.ClearNamespaceHold(ctx, ns, s.clock.Now())
	if err != nil {
		return metaErr("clear hold of namespace "+ns, err)
	}
	for _, r := range rs {
		s.sweepMetrics.ObserveFinished(r)
	}
	s.log.Info("legal hold lifted", "namespace", ns, "finished", len(rs), "actor", ActorFrom(ctx))
	return nil
}

// NamespaceHold returns a namespace's hold, nil if none.
func (s *Store) NamespaceHold(ctx context.Context, ns string) (*Hold, error) {
	if err := ValidateNamespace(ns); err != nil {
		return nil, err
	}
	h, err := s.meta.NamespaceHold(ctx, ns)
	if err != nil || h == nil {
		return nil, metaErr("hold of namespace "+ns, err)
	}
	return &Hold{Scope: HoldScopeNamespace, Reason: h.Reason, Since: h.At}, nil
}

// holdsOf returns the holds that keep claim c, for Stat.
func (s *Store) holdsOf(ctx context.Context, c meta.Claim) ([]Hold, error) {
	if c.State != meta.ClaimActive {
		return nil, nil
	}
	h, err := s.meta.ClaimHolds(ctx, c.ID)
	if err != nil {
		return nil, metaErr("holds of "+c.ID, err)
	}
	var hs []Hold
	if h.Claim != nil {
		hs = append(hs, Hold{Scope: HoldScopeClaim, Reason: h.Claim.Reason, Since: h.Claim.At})
	}
	if h.Namespace != nil {
		hs = append(hs, Hold{Scope: HoldScopeNamespace, Reason: h.Namespace.Reason, Since: h.Namespace.At})
	}
	return hs, nil
}

// refuseHeld answers ErrHeld when a hold keeps claim c (op is about to
// delete it).
func (s *Store) refuseHeld(ctx context.Context, op string, c meta.Claim) error {
	h, err := s.meta.ClaimHolds(ctx, c.ID)
	if err != nil {
		return metaErr(op+" "+c.ID, err)
	}
	switch {
	case h.Claim != nil:
		return fmt.Errorf("%s %s: %w: the claim is on legal hold (%q since %s); lift it first", op, c.ID, ErrHeld, h.Claim.Reason, h.Claim.At.Format(time.RFC3339))
	case h.Namespace != nil:
		return fmt.Errorf("%s %s: %w: namespace %s is on legal hold (%q since %s); lift it first", op, c.ID, ErrHeld, c.Namespace, h.Namespace.Reason, h.Namespace.At.Format(time.RFC3339))
	}
	return nil
}
