package blob

import (
	"context"
	"errors"
	"strings"
)

// ErrNoLifecycle is wrapped by a Lifecycler that cannot reach its
// bucket's lifecycle rules as configured (Azure without the storage
// account's resource): the safety net is absent, and the start-up
// set-up says so loudly rather than failing the start.
var ErrNoLifecycle = errors.New("lifecycle rules not reachable")

// LifecycleRule is one rule of a bucket's lifecycle configuration, reduced
// to what claimcheck manages and checks: objects whose keys start with
// Prefix are deleted by the bucket ExpireDays after they were written, and
// incomplete multipart uploads under Prefix are aborted AbortMultipartDays
// after they started. Zero means the rule has no such action.
type LifecycleRule struct {
	ID                 string
	Prefix             string
	ExpireDays         int
	AbortMultipartDays int
	// Filtered is set on a rule read from the bucket whose filter has more
	// than a prefix (tags, object sizes): it may apply to only some
	// objects. Such rules are kept as they are; checks treat them as if
	// they applied to every object under Prefix, which errs on the safe
	// side.
	Filtered bool
}

// Covers reports whether the rule may apply to some object under prefix:
// one of the two prefixes starts with the other.
func (r LifecycleRule) Covers(prefix string) bool {
	return strings.HasPrefix(prefix, r.Prefix) || strings.HasPrefix(r.Prefix, prefix)
}

// Lifecycler is implemented by stores whose bucket deletes objects by age
// on its own (S3 and GCS lifecycle rules, an Azure storage account's
// lifecycle management policy). The start-up bucket set-up
// (internal/bucketsetup) uses it for the safety net: a rule per
// namespace prefix, well past every deadline, so an object the protocol
// failed to delete does not stay forever.
type Lifecycler interface {
	// LifecycleRules returns the bucket's enabled rules (none: an empty
	// slice, not an error).
	LifecycleRules(ctx context.Context) ([]LifecycleRule, error)
	// PutLifecycleRules replaces the bucket's whole lifecycle
	// configuration with rules. Callers that share the bucket read the
	// rules first and keep the ones they do not own.
	PutLifecycleRules(ctx context.Context, rules []LifecycleRule) error
}
