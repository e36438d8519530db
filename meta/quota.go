package meta

import "context"

// QuotaStore reads the namespace quota counters for operators (namespace
// listings) and audits them against the claims.
//
// The counters in the namespaces table are the ones put and finish change
// in the same transaction as the claim (reservation on create, usage on
// commit, release on finish), so they must always equal the sums over the
// live claims. CountNamespaces recomputes those sums, so a test or fsck can
// prove that no path made them drift.
type QuotaStore interface {
	// Namespaces returns the counters of every namespace that has a row
	// (every namespace that ever had a claim), ordered by name.
	Namespaces(ctx context.Context) ([]Namespace, error)

	// CountNamespaces recomputes the counters from the pending and active
	// claims, in one read-only snapshot, ordered by name. Namespaces
	// without a live claim are left out. It reads every live claim: an
	// audit, not a hot path.
	CountNamespaces(ctx context.Context) ([]Namespace, error)

	// QuotaDrift compares every namespace's counters with the sums over
	// its live claims in one statement (one snapshot, so it is exact
	// beside traffic) and returns the namespaces where they differ. Read
	// only; it reads every live claim.
	QuotaDrift(ctx context.Context) ([]QuotaDrift, error)
}

// QuotaDrift is a namespace whose counters disagree with its claims.
type QuotaDrift struct {
	Counters Namespace `json:"counters"` // as stored
	Claims   Namespace `json:"claims"`   // summed over the live claims
}
