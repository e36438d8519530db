package meta

import "context"

// namespaceKey is the context key of WithNamespace.
type namespaceKey struct{}

// WithNamespace returns a context that names the namespace the rows of
// the call made with it belong to: the namespace of the claim reference
// a put, redeem, release or delete was given. It is a routing hint for a
// store distributed by namespace (ADR 0264): a store that has it names
// the namespace in every statement of the call, so that each goes to the
// one shard holding the namespace, where a lookup by claim id alone
// would ask every shard. It never changes an answer: a claim that is not
// in the named namespace is not found, as the engine already answers for
// a reference whose namespace is not the claim's.
func WithNamespace(ctx context.Context, ns string) context.Context {
	return context.WithValue(ctx, namespaceKey{}, ns)
}

// NamespaceFrom returns the namespace set by WithNamespace, or "" when
// none is.
func NamespaceFrom(ctx context.Context) string {
	ns, _ := ctx.Value(namespaceKey{}).(string)
	return ns
}
