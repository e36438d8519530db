package dispatch

import "github.com/claimcheck/claimcheck/egress"

// TargetPolicy is the outbound address policy subscriptions are held to,
// package egress's (ADR 0268): where the name is kept, the
// subscriptions section of the config and the engine's check at create
// keep their shape, and the policy itself lives in one place.
type TargetPolicy = egress.Policy

// ErrTargetRefused is the answer to a target the policy does not allow.
var ErrTargetRefused = egress.ErrTargetRefused
