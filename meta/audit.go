package meta

import (
	"context"
	"time"
)

// The audit trail: every lifecycle change of a claim appends an Event in
// the transaction that makes the change, stamped with the actor that
// caused it. Implementations write these events themselves (they alone
// know which compare-and-swaps won); the caller names the actor in the
// context with WithActor, or, for read receipts that are written later
// in batches, in Read.Actor.

// Lifecycle event kinds. Reason carries the finishing reason of expired,
// deleted and reaped events (one of the Reason constants).
const (
	EventCreated  = "created"  // a claim became active (put committed, dedup hit included)
	EventRedeemed = "redeemed" // a read was served (written with the batched read receipts)
	EventReleased = "released" // a consumer released the claim; Detail is the consumer name
	EventExpired  = "expired"  // finished at max_age
	EventDeleted  = "deleted"  // finished for another reason: deleted, released, read_retention_over
	EventReaped   = "reaped"   // a pending claim finished: never_confirmed or aborted

	// EventAllReleased is written with the release that completes a
	// claim's expected consumers (once per claim); EventExpiredUnread
	// beside the expired event of a claim nobody read (ADR 0240).
	EventAllReleased   = "all_released"
	EventExpiredUnread = "expired_unread"

	// EventConfirmed follows the created event of a claim whose upload
	// was confirmed (direct) or completed (resumable); a plain put logs
	// created alone. EventFirstRedeemed follows the redeemed event that
	// takes a claim's read count from zero, written with it in the
	// batched read receipts (ADR 0240).
	EventConfirmed     = "confirmed"
	EventFirstRedeemed = "first_redeemed"
)

// ActorSweeper is the actor of work the background sweeper does by itself.
const ActorSweeper = "sweeper"

// FinishEventKind is the event kind that records a claim finished with
// reason.
func FinishEventKind(reason string) string {
	switch reason {
	case ReasonExpired:
		return EventExpired
	case ReasonNeverConfirmed, ReasonAborted:
		return EventReaped
	}
	return EventDeleted
}

// AuditStore reads and prunes the events log. Part of Store.
type AuditStore interface {
	// ClaimEvents returns up to limit events of one claim with seq >
	// afterSeq, in seq order (an indexed lookup, not a scan of the log).
	ClaimEvents(ctx context.Context, claimID string, afterSeq int64, limit int) ([]Event, error)

	// NamespaceEvents returns up to limit events of a namespace at or
	// after since with seq > afterSeq, in seq order.
	NamespaceEvents(ctx context.Context, namespace string, since time.Time, afterSeq int64, limit int) ([]Event, error)

	// TenantEvents returns up to limit events stamped with tenant (its
	// administrative events: Event.Tenant) at or after since with seq >
	// afterSeq, in seq order.
	TenantEvents(ctx context.Context, tenant string, since time.Time, afterSeq int64, limit int) ([]Event, error)

	// PruneEvents deletes up to limit events older than before, oldest
	// first, in one transaction, and returns how many it deleted. The
	// caller repeats it page by page while it returns limit.
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
}
