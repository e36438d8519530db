package meta

import (
	"context"
	"time"
)

// DataKey is one row of the data_keys table: a namespace's data key for
// encryption at rest, wrapped by a master key (ADR 0066). The store never
// sees the key in clear; wrapping and unwrapping are the engine's job.
type DataKey struct {
	ID          string
	Namespace   string
	MasterKeyID string // which master key wrapped it
	Wrapped     []byte // nil once destroyed
	CreatedAt   time.Time
	DestroyedAt time.Time // zero while live
}

// Destroyed reports whether the key was shredded.
func (k DataKey) Destroyed() bool { return !k.DestroyedAt.IsZero() }

// DataKeyStore keeps the data keys of encrypted namespaces. A namespace
// has at most one live key at a time.
type DataKeyStore interface {
	// CreateDataKey makes k the live key of k.Namespace unless the
	// namespace has one already, and returns the live key: k, or the one
	// a concurrent caller created first. When k becomes live, the blobs
	// the namespace has so far (written in clear or under a destroyed key)
	// stop being dedup candidates, in the same transaction.
	CreateDataKey(ctx context.Context, k DataKey) (DataKey, error)

	// LiveDataKey returns the live key of ns. ErrNotFound if none.
	LiveDataKey(ctx context.Context, ns string) (DataKey, error)

	// DataKey loads a key by id, destroyed ones too (with Wrapped nil).
	// ErrNotFound if absent.
	DataKey(ctx context.Context, id string) (DataKey, error)

	// DestroyDataKey destroys the live key of ns (crypto-shredding): the
	// wrapped key is wiped in the same transaction that marks it
	// destroyed, and the row stays as a tombstone; blobs whose object key
	// ends in "."+id stop being dedup candidates. It fails with ErrHeld
	// and changes nothing when the namespace or any of its claims is on
	// legal hold, and with ErrNotFound when ns has no live key.
	DestroyDataKey(ctx context.Context, ns string, now time.Time) (DataKey, error)
}
