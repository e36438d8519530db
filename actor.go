package claimcheck

import (
	"context"

	"github.com/claimcheck/claimcheck/meta"
)

// WithActor returns a context that names who acts: the id of the API key
// that authenticated the request (the HTTP server sets it), or a name
// such as "cli" or "sweeper" for work the process does by itself. The
// store records it with every lifecycle event, so the audit trail says
// who created, redeemed, released or deleted a claim.
func WithActor(ctx context.Context, actor string) context.Context {
	// Stored where the metadata store looks for it, so the actor reaches
	// the events it writes in the same transaction as each change.
	return meta.WithActor(ctx, actor)
}

// ActorFrom returns the actor set by WithActor, or "" when none is.
func ActorFrom(ctx context.Context) string {
	return meta.ActorFrom(ctx)
}
