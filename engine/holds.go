package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/meta"
)

// maxHoldReason bounds a hold's reason (a case number, a ticket link).
const maxHoldReason = 512

// SetHold puts a claim on hold.
func (s *Store) SetHold(ctx context.Context, ref claimcheck.Ref, reason string) error {
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
			return fmt.Errorf("hold %s: %w: the claim is still being written", c.ID, claimcheck.ErrNotFound)
		}
		err = s.meta.SetClaimHold(ctx, c.ID, reason, s.clock.Now())
		if err == nil {
			s.log.InfoContext(ctx, "legal hold set", "claim", c.ID, "namespace", c.Namespace, "reason", reason, "actor", claimcheck.ActorFrom(ctx))
			return nil
		}
		if !errors.Is(err, meta.ErrConflict) || attempt == maxCASRetries {
			return metaErr("hold "+c.ID, err)
		}
	}
}

// ClearHold lifts a claim's own hold.
func (s *Store) ClearHold(ctx context.Context, ref claimcheck.Ref) error {
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
	s.log.InfoContext(ctx, "legal hold lifted", "claim", c.ID, "namespace", c.Namespace, "finished", finished, "actor", claimcheck.ActorFrom(ctx))
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
	s.log.InfoContext(ctx, "legal hold set", "namespace", ns, "reason", reason, "claims", parked, "actor", claimcheck.ActorFrom(ctx))
	return nil
}

// ClearNamespaceHold lifts a namespace hold.
func (s *Store) ClearNamespaceHold(ctx context.Context, ns string) error {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return fmt.Errorf("clear hold: %w", err)
	}
	rs, err := s.meta.ClearNamespaceHold(ctx, ns, s.clock.Now())
	if err != nil {
		return metaErr("clear hold of namespace "+ns, err)
	}
	for _, r := range rs {
		s.sweepMetrics.ObserveFinished(r)
	}
	s.log.InfoContext(ctx, "legal hold lifted", "namespace", ns, "finished", len(rs), "actor", claimcheck.ActorFrom(ctx))
	return nil
}

// NamespaceHold returns a namespace's hold, nil if none.
func (s *Store) NamespaceHold(ctx context.Context, ns string) (*claimcheck.Hold, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return nil, err
	}
	h, err := s.meta.NamespaceHold(ctx, ns)
	if err != nil || h == nil {
		return nil, metaErr("hold of namespace "+ns, err)
	}
	return &claimcheck.Hold{Scope: claimcheck.HoldScopeNamespace, Reason: h.Reason, Since: h.At}, nil
}

// holdsOf returns the holds that keep claim c, for Stat.
func (s *Store) holdsOf(ctx context.Context, c meta.Claim) ([]claimcheck.Hold, error) {
	if c.State != meta.ClaimActive {
		return nil, nil
	}
	h, err := s.meta.ClaimHolds(ctx, c.ID)
	if err != nil {
		return nil, metaErr("holds of "+c.ID, err)
	}
	var hs []claimcheck.Hold
	if h.Claim != nil {
		hs = append(hs, claimcheck.Hold{Scope: claimcheck.HoldScopeClaim, Reason: h.Claim.Reason, Since: h.Claim.At})
	}
	if h.Namespace != nil {
		hs = append(hs, claimcheck.Hold{Scope: claimcheck.HoldScopeNamespace, Reason: h.Namespace.Reason, Since: h.Namespace.At})
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
		return fmt.Errorf("%s %s: %w: the claim is on legal hold (%q since %s); lift it first", op, c.ID, claimcheck.ErrHeld, h.Claim.Reason, h.Claim.At.Format(time.RFC3339))
	case h.Namespace != nil:
		return fmt.Errorf("%s %s: %w: namespace %s is on legal hold (%q since %s); lift it first", op, c.ID, claimcheck.ErrHeld, c.Namespace, h.Namespace.Reason, h.Namespace.At.Format(time.RFC3339))
	}
	return nil
}
