package meta

import (
	"context"
	"errors"
	"time"
)

// Integrity under damage (ADR 0095). A blob whose object was found
// altered, short or missing is marked damaged: a flag beside its state,
// set and cleared under the same compare-and-swap as the state (on the
// blob id, its object key and a committed or orphaned state), so a
// finding about an object the blob no longer owns (it was repaired or
// collected meanwhile) changes nothing. A damaged blob keeps its claims
// and its lifecycle; what changes:
//
//   - dedup never attaches a new claim to it: CommitExisting misses (the
//     digest-first put then sends its body), and Commit repairs it with
//     the new object (CommitParams.RepairVerified) or refuses with
//     ErrDamagedCandidate so the caller verifies its object first;
//   - the engine answers a redeem of it with checksum_mismatch at once.

// Causes of damage, the first word of Blob.Damage and the cause label of
// the damage metric.
const (
	DamageChecksum = "checksum_mismatch" // the bytes fail the digest, decryption or decompression
	DamageSize     = "size_mismatch"     // the object's size is not the stored size (truncated or grown)
	DamageMissing  = "missing"           // the object does not exist
	// DamageUnreadable: the storage answers every request about the
	// object with an error of its own while it answers others (ADR 0255).
	DamageUnreadable = "unreadable"
)

// Event kinds of damage and repair, written in the transaction of the
// change.
const (
	EventBlobDamaged  = "blob_damaged"  // a blob was marked damaged; Detail says what was found
	EventBlobRepaired = "blob_repaired" // a put brought the bytes of a damaged blob: it has a good object again
	EventBlobVerified = "blob_verified" // a scrub read a damaged blob's object and found it good (restored by an operator)
)

// ErrDamagedCandidate is Commit's answer when the dedup candidate of the
// digest is damaged and the caller did not say it verified its own object
// (CommitParams.RepairVerified): nothing changed. The caller reads its
// object back, checks it against the digest and commits again with
// RepairVerified, which repairs the damaged blob.
var ErrDamagedCandidate = errors.New("meta: the dedup candidate is damaged")

// Damage is one finding about a blob's object.
type Damage struct {
	BlobID string
	// Key is the object the finding is about: the blob is marked only
	// if it still owns that object.
	Key    string
	Cause  string // one of the Damage* causes
	Detail string // what was found, for humans
	Now    time.Time
}

// IntegrityStore marks, lists and clears damaged blobs.
type IntegrityStore interface {
	// MarkDamaged marks the blob damaged if it is committed or orphaned,
	// still owns d.Key and is not marked already, and appends a
	// blob_damaged event, in one transaction. It reports whether it
	// marked; false with a nil error is a lost compare-and-swap (nothing
	// changed). ErrNotFound if there is no such blob.
	MarkDamaged(ctx context.Context, d Damage) (bool, error)

	// ClearDamage makes a damaged blob healthy again when its object key
	// is still key (a scrub read it whole and it matched its digest),
	// with a blob_verified event, in one transaction. It reports whether
	// it changed the blob.
	ClearDamage(ctx context.Context, blobID, key string, now time.Time) (bool, error)

	// DamagedBlobs returns up to limit damaged blobs with id > afterID,
	// in id order, whatever their state.
	DamagedBlobs(ctx context.Context, afterID string, limit int) ([]Blob, error)

	// DedupCandidate returns the blob dedup would consider for (ns,
	// digest): the committed or orphaned one that holds the namespace's
	// dedup mark, damaged or not. ErrNotFound if there is none. Read-only:
	// the digest-first put checks its object before CommitExisting.
	DedupCandidate(ctx context.Context, ns, digest string) (Blob, error)

	// SaveBlockTable records the block table of the plain object at key
	// (ADR 0257), replacing any table recorded for that key before. A
	// write path saves it after the object is complete and before the
	// commit that makes the object's claim redeemable. The table belongs
	// to the object, not to a blob row, so a repair that hands the object
	// to another blob keeps it; it is removed when the blob owning the
	// object is collected (FinishCollect).
	SaveBlockTable(ctx context.Context, key string, table []byte) error

	// BlockTable returns the block table recorded for the object at key;
	// ok is false when it has none (written before block tables, not
	// plain, or at most one block long).
	BlockTable(ctx context.Context, key string) (table []byte, ok bool, err error)
}
