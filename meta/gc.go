package meta

import (
	"context"
	"time"
)

// Types of the garbage-collection operations of Store: the digest-first
// put (CommitExisting), the backstop's paged reads and repairs, and the
// events log.

// CommitExistingParams describe a put whose digest and size are known
// before its body (docs/ARCHITECTURE.md, "Put", step 4): if a blob with that content can
// be shared, the claim is created active on it at once and the body is
// never read.
type CommitExistingParams struct {
	// Claim is the new claim: ID, Namespace, Size (the declared size),
	// ContentType, Labels, CreatedAt, ExpiresAt, DueAt/DueReason (its
	// deadline once active) and the policy fields. State and BlobID are
	// set by the operation.
	Claim  Claim
	Digest string
	Now    time.Time
	// Only blobs created at or after DedupNotBefore qualify (as in
	// CommitParams).
	DedupNotBefore time.Time
	QuotaBytes     int64 // 0 = unlimited
	QuotaClaims    int64 // 0 = unlimited
	// Tenant is the tenant's quota, checked too (tenants.go).
	Tenant TenantQuota
	// BlobID and Key, when set, are the candidate the caller checked
	// (found by DedupCandidate or CreatePending, then one stat of its
	// object): the hit is taken only
	// if the candidate is still that blob with that object. A damaged
	// candidate is always a miss, so the caller sends the body that
	// repairs it.
	BlobID string
	Key    string
	// Check, when set, is called inside the transaction with the
	// candidate read, locked and found shareable, before the claim is
	// written (on SQLite after the reference is taken in the
	// transaction, so the candidate's refcount and version count it:
	// ADR 0170); false makes the put a miss that changed nothing. A caller
	// whose object check is local (a stat of a file) passes it instead
	// of BlobID and Key, so that the whole hit is one transaction (ADR
	// 0140): the candidate is found, its object checked and the claim
	// attached without a read before. It runs while the transaction
	// holds its locks (on SQLite, the database's one writer), so it must
	// be quick and must not call the Store. It may run more than once
	// (a transaction run again after a lost race).
	Check func(ctx context.Context, candidate Blob) bool
}

// RefFix reports one blob whose refcount hint disagreed with the live
// claims that reference it, or that the backstop orphaned.
type RefFix struct {
	BlobID     string
	Namespace  string
	State      BlobState // state before the fix
	Refcount   int64     // stored hint before the fix
	Live       int64     // pending and active claims that reference it
	Orphaned   bool      // committed with no live claim: now orphaned with grace
	StoredSize int64     // the blob's object size
}

// Event is one row of the events log: something an operator should see
// later (a missing object, a repaired drift). Kinds are short snake_case
// names; Detail is free text for humans.
type Event struct {
	Seq       int64 // assigned on append, increasing
	At        time.Time
	Kind      string
	Namespace string
	ClaimID   string
	BlobID    string
	Detail    string
	// Actor is who caused it: an API key id, a name such as "sweeper",
	// or "" when unknown. Reason is the finishing reason of lifecycle
	// events (audit.go), the scope of hold events (holds.go).
	Actor  string
	Reason string
	// Tenant is the tenant an administrative event concerns (API keys,
	// failed authentications with a known key; keys.go), "" for the
	// events of claims, which their namespace places.
	Tenant string
}

// Event kinds written by the garbage collector.
const (
	EventObjectMissing = "object_missing" // a blob row whose object is gone
	EventRefcountDrift = "refcount_drift" // a refcount hint repaired
	EventDebrisDeleted = "debris_deleted" // an object without a row, collected
)
