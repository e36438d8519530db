package claimcheck

import "context"

// Admin is what operators use: legal holds, crypto-shredding and master
// key rotation, the dead letters, the audit trail and the namespaces'
// limits and usage. Both *engine.Store (embedded) and client.Client
// (remote) implement it. On the HTTP API these are admin keys' routes,
// except the namespace reads, which every key of the namespace may make,
// and each tenant's admins see their own namespaces only.
type Admin interface {
	// SetHold puts the claim on a legal hold (holds.go, ADR 0065);
	// setting it again replaces the reason. The claim must be active: a
	// finished one answers a *GoneError, a pending one ErrNotFound.
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

	// DestroyNamespaceKey wipes the namespace's data key: every object
	// encrypted under it is unreadable for good (crypto-shredding,
	// crypt.go).
	DestroyNamespaceKey(ctx context.Context, ns string) error
	// RewrapDataKeys moves the live data keys to the current master key
	// (rewrap.go, ADR 0075); the client does it one namespace at a time.
	RewrapDataKeys(ctx context.Context, opt RewrapOptions) (RewrapReport, error)

	// DeadLetters returns a page of dead letters (deadletter.go, ADR
	// 0055) in blob id order.
	DeadLetters(ctx context.Context, q DeadLetterQuery) (DeadLetterPage, error)
	// DeadLetter returns one. ErrNotFound if the blob is unknown or not
	// parked (retried or collected since).
	DeadLetter(ctx context.Context, id string) (DeadLetter, error)
	// RetryDeadLetter puts a dead letter back in the sweeper's queue, due
	// now, with a fresh retry schedule, and returns it as it was parked.
	// ErrNotFound as for DeadLetter: a second retry finds nothing.
	RetryDeadLetter(ctx context.Context, id string) (DeadLetter, error)
	// RetryDeadLetters retries the dead letters of the page q selects and
	// returns those it took back, with the page's Next: to retry them
	// all, call it again with After = Next until Next is empty.
	RetryDeadLetters(ctx context.Context, q DeadLetterQuery) (DeadLetterPage, error)

	// ClaimEvents returns a page of the events of the claim of ref
	// (audit.go). A ref with a namespace must match the claim's
	// (ErrNotFound otherwise, as for every claim lookup). Events of
	// finished claims remain until retention prunes them.
	ClaimEvents(ctx context.Context, ref Ref, q EventQuery) ([]Event, error)
	// NamespaceEvents returns a page of the events of namespace ns.
	NamespaceEvents(ctx context.Context, ns string, q EventQuery) ([]Event, error)
	// TenantEvents returns a page of the administrative events of tenant:
	// API keys created and revoked (namespace-scoped or not), and failed
	// authentications with one of its keys. Claim and hold events are
	// read per namespace.
	TenantEvents(ctx context.Context, tenant string, q EventQuery) ([]Event, error)

	// Namespace returns one namespace's policy, limits and usage
	// (namespace.go). ErrNotFound when the namespace is neither
	// configured (nor covered by the defaults) nor holds claims.
	Namespace(ctx context.Context, ns string) (NamespaceInfo, error)
	// Namespaces returns every configured namespace and every namespace
	// that holds or held claims, ordered by name.
	Namespaces(ctx context.Context) ([]NamespaceInfo, error)
}
