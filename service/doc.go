// Package service is the scaffold claimcheck's background services are
// built on: the sweeper and its backstop, scrub and retention (sweep),
// the webhook dispatcher (dispatch) and the Temporal keeper
// (integrations/temporal).
//
// It has three parts, each small enough to read at once:
//
//   - StartStop starts a service's goroutine and stops it: Start returns
//     at once, Stop cancels the service and waits for it, both are
//     idempotent, and a stopped service stays stopped.
//   - Every runs a function every Config.Interval until its context ends,
//     on a fixed schedule like a time.Ticker (a run that outlasts its
//     interval is followed by the next at once, then the schedule goes
//     on). Its waits are on Config.Clock and cancellable (clock.Until).
//   - Lease holds a named lease of the metadata store (Leaser, the one
//     method pair it needs), so that one replica of a store does a job
//     at a time: taken and given back around one run (Run), taken and
//     renewed across runs (Keep), or taken without a release so that it
//     lapses by itself (Take).
//
// A service keeps its own Config with defaults (WithDefaults) and a
// Validate, reads the time from its injected clock, and lets tests wait on
// the clock (clock.Fake.Waiting) or on hooks instead of sleeping. The
// package is a leaf (it imports only clock), so that a module outside the
// root one, such as the Temporal integration, may build on it without
// linking the engine.
package service
