package meta

import (
	"context"
	"errors"
	"time"
)

// ErrShredIncomplete is returned by DestroyDataKey when the key was
// destroyed (the transaction committed: reads refuse it from now on) but
// old copies of it may remain in the database's files for now, e.g. a WAL
// checkpoint that a reader kept from finishing (ADR 0096). Retrying the
// checkpoint, or the destroy's caller reporting it, is the remedy.
var ErrShredIncomplete = errors.New("meta: shred committed, erasure incomplete")

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

// Audit event kinds of data keys, written by the store in the transaction
// of the change (ADR 0070). Namespace is the key's namespace; Detail names
// the key (and, for a rewrap, both master keys).
const (
	EventDataKeyDestroyed = "data_key_destroyed" // DestroyDataKey shredded a namespace's key
	EventDataKeyRewrapped = "data_key_rewrapped" // RewrapDataKey moved a key to another master key
)

// Rewrap is one compare-and-swap of RewrapDataKey: key ID, wrapped by
// master key From when it was read, is to be wrapped by master key To.
// Wrapped is the same data key sealed by To.
type Rewrap struct {
	ID      string
	From    string
	To      string
	Wrapped []byte
	At      time.Time // the event's time
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
	//
	// The key_destroyed event (actor from the context) is written in the
	// same transaction.
	DestroyDataKey(ctx context.Context, ns string, now time.Time) (DataKey, error)

	// LiveDataKeys returns up to limit live keys with id > afterID, in id
	// order: every namespace's when ns is "", else only ns's. Destroyed
	// keys are never listed. The caller pages on the last id.
	LiveDataKeys(ctx context.Context, ns, afterID string, limit int) ([]DataKey, error)

	// RewrapDataKey replaces the wrapped form of key r.ID by r.Wrapped and
	// its master key id by r.To, if the key is live and still wrapped by
	// r.From: a compare-and-swap, so concurrent rewraps of one key change
	// it once, and a destroyed key never gets key material back. The
	// data_key_rewrapped event (actor from the context) is written in the
	// same transaction. It reports whether it swapped; false (with a nil
	// error) means the key is destroyed or no longer wrapped by r.From,
	// and nothing changed. ErrNotFound if there is no key r.ID.
	RewrapDataKey(ctx context.Context, r Rewrap) (bool, error)
}
