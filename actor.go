package claimcheck

import "context"

type actorKey struct{}

// WithActor returns a context that names who acts: the id of the API key
// that authenticated the request (the HTTP server sets it), or a name
// such as "cli" or "sweeper" for work the process does by itself. The
// store records it with every lifecycle event, in the same transaction as
// each change, so the audit trail says who created, redeemed, released or
// deleted a claim without every operation taking a parameter for it.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom returns the actor set by WithActor, or "" when none is.
func ActorFrom(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}
