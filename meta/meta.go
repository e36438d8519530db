// Package meta is the metadata store of claimcheck: namespaces with their
// quota counters, blobs, claims and their releases.
//
// The Store interface is deliberately made of whole operations, each one
// database transaction, rather than of single queries: every protocol step
// of the design (create a pending put, commit it, record a read, release,
// finish a claim, collect a blob) must change the claim, the blob and the
// namespace counters atomically, and the conformance suite in meta/metatest
// checks those transactions the same way on every implementation.
//
// Rules every implementation keeps:
//   - Time never comes from the database: every operation takes Now from the
//     caller (the engine's injected clock), so tests can move time.
//   - State changes are compare-and-swap on the current state; a lost race
//     is reported as ErrConflict (or as "nothing to do"), never as damage.
//   - Every row that is not terminal has a due time (claims.due_at,
//     blobs.collect_at), indexed, and sweeps read due rows in due order a
//     page at a time, never the whole table.
//   - The refcount on a blob is a hint. A blob leaves "orphaned" for
//     "deleting" only in a transaction that re-checks that no pending or
//     active claim points at it.
//
// Instrument wraps any Store with Prometheus metrics and OpenTelemetry
// spans, by operation (method) and by result, where the contract's own
// answers (not found, a lost compare-and-swap, a quota or hold refusal)
// are told apart from failures. Its forwarding methods are generated from
// Store (instrument_gen.go, `go generate ./meta`): a method added to
// Store is an operation with its metrics and span as soon as the file is
// regenerated, and a test fails until it is.
//
// Store is the whole store, for its implementations and the engine,
// which owns it. Every other consumer (auth, dispatch, sweep,
// internal/integrity) declares the narrow interface it uses, made of
// Store's methods, and takes that: what a package may do to the database
// is read off its own declaration.
package meta

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Errors returned by every implementation. The engine translates them
// into the public sentinel errors of package claimcheck.
var (
	// ErrNotFound: no row with that id.
	ErrNotFound = errors.New("meta: not found")
	// ErrConflict: the row was not in the state the operation requires
	// (a lost compare-and-swap). The caller reloads and decides.
	ErrConflict = errors.New("meta: conflict")
)

// QuotaError is returned when a reservation or commit would exceed a
// namespace quota. It names the limit and the usage at the time.
type QuotaError struct {
	// Tenant is set when the tenant's quota (over all its namespaces),
	// not the namespace's own, would be exceeded.
	Tenant    string
	Namespace string
	Resource  string // "bytes" or "claims"
	Limit     int64
	Used      int64 // usage of committed claims
	Reserved  int64 // held by pending claims
	Requested int64
}

func (e *QuotaError) Error() string {
	if e.Tenant != "" {
		return fmt.Sprintf("tenant %s (namespace %s): tenant quota of %d %s would be exceeded (used %d, reserved %d, requested %d)",
			e.Tenant, e.Namespace, e.Limit, e.Resource, e.Used, e.Reserved, e.Requested)
	}
	return fmt.Sprintf("namespace %s: quota of %d %s would be exceeded (used %d, reserved %d, requested %d)",
		e.Namespace, e.Limit, e.Resource, e.Used, e.Reserved, e.Requested)
}

// ClaimState is the state of a claim row.
type ClaimState string

// Claim states: pending → active → deleted, or pending → deleted.
const (
	ClaimPending ClaimState = "pending"
	ClaimActive  ClaimState = "active"
	ClaimDeleted ClaimState = "deleted"
)

// BlobState is the state of a blob row: staging → committed → orphaned →
// deleting → deleted, with orphaned → committed on a dedup hit during the
// grace period, and staging → orphaned when its put fails or is
// deduplicated onto another blob.
type BlobState string

// Blob states.
const (
	BlobStaging   BlobState = "staging"
	BlobCommitted BlobState = "committed"
	BlobOrphaned  BlobState = "orphaned"
	BlobDeleting  BlobState = "deleting"
	BlobDeleted   BlobState = "deleted"
)

// Reasons stored in claims.due_reason and claims.delete_reason: the
// strings of claimcheck.GoneReason, whose list is the only one.
const (
	ReasonExpired        = string(claimcheck.ReasonExpired)
	ReasonReleased       = string(claimcheck.ReasonReleased)
	ReasonReadRetention  = string(claimcheck.ReasonReadRetention)
	ReasonDeleted        = string(claimcheck.ReasonDeleted)
	ReasonNeverConfirmed = string(claimcheck.ReasonNeverConfirmed)
	ReasonAborted        = string(claimcheck.ReasonAborted)
	ReasonKeyDestroyed   = string(claimcheck.ReasonKeyDestroyed)
)

// Namespace holds a namespace's counters. Limits live in the policy (the
// config), not here, and are passed to the operations that check them.
type Namespace struct {
	Name          string
	UsedBytes     int64 // sizes of active claims
	ReservedBytes int64 // reservations of pending claims
	ActiveClaims  int64
	PendingClaims int64
	// FinishedClaims counts the claims finished for any reason since the
	// counter was added (migration 0064): history, not quota, so
	// CountNamespaces and QuotaDrift leave it out (0 there).
	FinishedClaims int64
}

// DueBacklog is Store.DueBacklog's answer: bounded counts of what is due.
type DueBacklog struct {
	// Total counts due claims (not held) and blobs, at most the bound.
	Total int64
	// ByNamespace counts the due claims among the first bound of the
	// claims' due index (earliest first) per namespace; blobs belong to
	// no namespace and are not in it.
	ByNamespace map[string]int64
	// ClaimsCapped says the claims' read stopped at the bound: there may
	// be more due claims than ByNamespace sums to.
	ClaimsCapped bool
}

// Claim is one row of the claims table.
type Claim struct {
	ID        string
	Namespace string
	BlobID    string
	State     ClaimState

	Size          int64 // original size; the declared size (or 0) while pending
	ReservedBytes int64 // quota reservation held while pending
	ContentType   string
	Labels        map[string]string

	CreatedAt time.Time
	ExpiresAt time.Time // created + max_age; never extended
	// DueAt is when the claim must be finished (zero once deleted); DueReason
	// is the reason it will be finished with. Whoever lowers DueAt sets both.
	DueAt     time.Time
	DueReason string

	// Policy fields copied at creation, so policy changes only affect new
	// claims.
	DeleteAfterRead    bool
	RetentionAfterRead time.Duration
	GracePeriod        time.Duration

	Reads       int64
	FirstReadAt time.Time
	LastReadAt  time.Time

	Consumers     int      // releases needed to finish (at least 1)
	ConsumerNames []string // when set, only these names count
	ReleasedBy    []string // distinct consumers that released, in order

	DeletedAt    time.Time
	DeleteReason string

	// TraceParent is the W3C traceparent of the span that created the
	// claim (its put or upload; ADR 0250), kept so that every later
	// operation on the claim can link its span to it. Empty when no
	// sampled span created it.
	TraceParent string
}

// Blob is one row of the blobs table: one stored object.
type Blob struct {
	ID          string
	Namespace   string
	Digest      string // "sha256:<hex>" of the original bytes; empty while staging
	Size        int64  // original size
	StoredSize  int64  // object size
	Compression string
	Key         string // object key in blob storage
	State       BlobState
	Refcount    int64 // hint only
	CreatedAt   time.Time
	StateAt     time.Time // when State last changed
	// CollectAt is the blob's due time: set while staging, orphaned or
	// deleting; zero while committed (its claims own its lifetime) and once
	// deleted.
	CollectAt time.Time
	Attempts  int    // failed collection attempts
	LastError string // last collection error
	Version   int64  // bumped on every change
	// DeadAt is when the blob was parked as a dead letter (deleting, no
	// collect_at; see DeadLetterStore); zero otherwise.
	DeadAt time.Time
	// DamagedAt is when the blob's object was found altered, short or
	// missing (IntegrityStore); zero while it is healthy. Damage says
	// what was found.
	DamagedAt time.Time
	Damage    string
	// AppendHandle is the storage's handle on the object while a
	// resumable upload appends to it (blob.Appender; S3: the multipart
	// upload id), "" otherwise. Collecting the blob aborts it.
	AppendHandle string
}

// Damaged reports whether the blob is marked damaged.
func (b Blob) Damaged() bool { return !b.DamagedAt.IsZero() }

// CreatePendingParams describe step 1 of a put.
type CreatePendingParams struct {
	Claim Claim // State must be pending; DueAt/DueReason the upload deadline
	Blob  Blob  // State must be staging; CollectAt at or after the claim's DueAt
	Now   time.Time
	// Quota limits of the namespace (0 = unlimited). The reservation is
	// Claim.ReservedBytes; the claim count includes pending claims.
	QuotaBytes  int64
	QuotaClaims int64
	Tenant      TenantQuota // the tenant's quota, checked too (tenants.go)
	// UnlessDigest, when set, makes the call the digest-first check of
	// the put too (ADR 0010): if the namespace holds a dedup candidate
	// of these bytes (what DedupCandidate returns), nothing is created
	// and the answer is a *CandidateError with it. One call where the
	// check and the creation took two.
	UnlessDigest string
}

// CandidateError answers a CreatePending with UnlessDigest: the
// namespace holds a dedup candidate of those bytes, Blob, and nothing
// was created.
type CandidateError struct {
	Blob Blob
}

func (e *CandidateError) Error() string {
	return fmt.Sprintf("blob %s holds %s already", e.Blob.ID, e.Blob.Digest)
}

// CommitParams describe step 3 of a put: the object is written.
type CommitParams struct {
	ClaimID     string
	BlobID      string // the claim's staging blob
	Digest      string
	Size        int64
	StoredSize  int64
	Compression string
	Now         time.Time
	// DueAt and DueReason are the claim's deadline once active.
	DueAt     time.Time
	DueReason string
	// Dedup allows pointing the claim at an existing committed or orphaned
	// blob of the same namespace and digest instead of the staging blob.
	// Only blobs created at or after DedupNotBefore qualify (the lifecycle
	// safety net: an older object could be expired by the bucket before
	// this claim's deadline).
	Dedup          bool
	DedupNotBefore time.Time
	QuotaBytes     int64 // byte limit checked against the final size
	// Tenant is the tenant's quota; its byte limit is checked like
	// QuotaBytes (tenants.go).
	Tenant TenantQuota
	// DiscardRetry is when, after Now, a collection retries the delete
	// of a staging blob that a dedup hit made unneeded (CommitResult.
	// Discarded) if the caller has not finished it by then.
	DiscardRetry time.Duration
	// RepairVerified says the caller read the staging object back and it
	// matched Digest and Size. Only then may a damaged dedup candidate be
	// repaired with it (integrity.go): the candidate takes the staging
	// object (key, stored size, compression, created now), becomes
	// healthy and committed, the claim shares it, and the staging blob
	// takes the damaged object's key and is Discarded, so the caller
	// deletes the bad object. Without it, a damaged candidate with Dedup
	// on answers ErrDamagedCandidate and nothing changes.
	RepairVerified bool
	// CheckCandidate makes a dedup hit wait for the caller's check of
	// the shared object (ADR 0255): the claim shares a healthy candidate
	// only if it is CheckedBlobID still owning CheckedKey; any other
	// candidate it would share answers *CandidateError naming it and
	// nothing changes. The caller checks that object (existence and
	// size) and commits again with it named, or marks it damaged, which
	// makes the next commit the repair. A commit that shares nothing
	// never waits.
	CheckCandidate bool
	CheckedBlobID  string
	CheckedKey     string
	// Confirmed says an upload becomes the claim (a direct upload
	// confirmed, a resumable upload completed): a confirmed event is
	// logged after the created one, in the same transaction (ADR 0240).
	Confirmed bool
}

// CommitResult says which blob the committed claim points at.
type CommitResult struct {
	Claim    Claim
	Blob     Blob
	DedupHit bool // the claim shares an existing blob; the staging blob is Discarded
	FlipBack bool // the shared blob was orphaned and is committed again
	// Discarded is the claim's own staging blob after a dedup hit: no
	// claim can ever reference it (it has no digest), so it goes straight
	// to deleting, due at Now + DiscardRetry. The caller deletes its
	// object at once and calls FinishCollect; if that fails or the caller
	// dies, collection retries it like any deleting blob. Zero without a
	// dedup hit.
	Discarded Blob
	// Repaired: the shared blob was damaged and now owns the claim's
	// freshly written object (CommitParams.RepairVerified); Discarded then
	// holds the damaged object's key.
	Repaired bool
}

// Read is one served read of a claim.
type Read struct {
	ClaimID string
	// Namespace is the claim's namespace, which the engine knows when
	// it serves the read: the store finds the claim by namespace and id,
	// a lookup a PostgreSQL distributed by namespace routes to one shard
	// (ADR 0264). A claim that is not in the namespace is not found (its
	// read is skipped). Empty: the namespace named on the context of the
	// call (WithNamespace) if any, else the claim is found by id alone,
	// as before reads carried their namespace (on a distributed
	// PostgreSQL, a statement sent to every shard).
	Namespace string
	At        time.Time
	Actor     string // who redeemed it, for the audit trail
}

// UnrecordedReadsError is the error of RecordReads when a store writes
// a batch in more than one transaction (one per namespace) and some of
// them failed: Reads are the reads that were not recorded, in batch
// order, to send again; the others were recorded, and sending them again
// would count them twice.
type UnrecordedReadsError struct {
	Reads []Read
	Err   error
}

func (e *UnrecordedReadsError) Error() string {
	return fmt.Sprintf("%d reads not recorded: %v", len(e.Reads), e.Err)
}

func (e *UnrecordedReadsError) Unwrap() error { return e.Err }

// FinishResult reports one finished claim.
type FinishResult struct {
	Claim         Claim // as it is now (State deleted)
	PreviousState ClaimState
	BlobOrphaned  bool // the claim was the blob's last reference
}

// Store is the metadata store. All methods are safe for concurrent use.
// Methods that take a Now use it for every comparison and timestamp.
type Store interface {
	KeyStore // API keys (keys.go)

	// SubscriptionStore: receivers of events (subscriptions.go).
	SubscriptionStore

	// UploadStore: direct uploads (meta/uploads.go).
	UploadStore
	// ResumableStore: direct uploads in appends (meta/uploads.go).
	ResumableStore

	// CreatePending inserts a staging blob and a pending claim and reserves
	// quota, in one transaction. It fails with *QuotaError (and inserts
	// nothing) when the reservation does not fit.
	CreatePending(ctx context.Context, p CreatePendingParams) error

	// Commit turns a pending claim active (put step 3), in one transaction:
	// claim pending → active (compare-and-swap; ErrConflict if the claim is
	// no longer pending, e.g. reaped), dedup onto an existing blob or
	// staging → committed, reservation → usage. On a *QuotaError nothing
	// changes.
	Commit(ctx context.Context, p CommitParams) (CommitResult, error)

	// ExtendPending raises the due time of the pending claim claimID and
	// the collect time of its staging blob blobID to dueAt, never lowering
	// either: a put still receiving its body keeps its rows while it makes
	// progress (its deadline follows its progress, like the server's read
	// timeout), and only a stalled put is reaped. ErrConflict if the claim
	// is no longer pending (reaped, or committed).
	ExtendPending(ctx context.Context, claimID, blobID string, dueAt time.Time) error

	// Claim loads a claim with its releases. ErrNotFound if absent.
	Claim(ctx context.Context, id string) (Claim, error)

	// Blob loads a blob. ErrNotFound if absent.
	Blob(ctx context.Context, id string) (Blob, error)

	// ClaimWithBlob loads a claim with its releases, and the blob it
	// points at, read together: a redeem needs both (one round trip
	// instead of two on a database server, and one snapshot). ok is
	// false when that blob's row was not found (the caller loads it with
	// Blob, which answers why). ErrNotFound if the claim is absent.
	ClaimWithBlob(ctx context.Context, id string) (c Claim, b Blob, ok bool, err error)

	// RecordReads records reads that were served (the engine batches them
	// off the redeem path), in one transaction, or in one per namespace
	// (a store distributed by namespace, or ready to be: its statements
	// then name the namespace), in which case an error after some of them
	// committed is an *UnrecordedReadsError naming the reads not recorded.
	// Each read of an active claim in the namespace the read names counts:
	// reads+1, the earliest At becomes the first read time and the latest
	// the last, and with delete_after_read the due time is lowered to
	// min(due, first read + retention) with reason read_retention_over. A
	// read counts even if the claim is due by now (its bytes were served).
	// Reads of claims that are pending, finished, unknown or in another
	// namespace change nothing; their ids are returned in skipped, in the
	// order of reads.
	RecordReads(ctx context.Context, reads []Read) (skipped []string, err error)

	// Release records that consumer released an active claim. It is
	// idempotent per consumer name (a repeated name changes nothing). When
	// ConsumerNames is set only those names count; the engine refuses
	// other names before calling. When the number of distinct counted
	// releases reaches Consumers, the due time is lowered to
	// min(due, now + retention) with reason released. ErrConflict if the
	// claim is not active or is due at now.
	Release(ctx context.Context, id, consumer string, now time.Time) (Claim, error)

	// FinishClaim finishes a claim: state → deleted with reason, quota
	// released (reservation or usage), blob reference dropped; if no live
	// claim references the blob any more it becomes orphaned with
	// collect_at = now + the claim's grace period (a staging blob: now).
	// With onlyIfDue the claim is finished only if its due time has passed,
	// with its stored due reason, and reason is ignored. Finishing an
	// already deleted (or not yet due) claim changes nothing and returns
	// done=false.
	FinishClaim(ctx context.Context, id string, reason string, now time.Time, onlyIfDue bool) (res FinishResult, done bool, err error)

	// FinishDueClaims finishes up to limit claims whose due time is at or
	// before now, oldest due first, in one transaction, and returns them.
	// Rows taken by a concurrent caller are skipped, not waited for.
	FinishDueClaims(ctx context.Context, now time.Time, limit int) ([]FinishResult, error)

	// BeginCollect moves up to limit due blobs (orphaned or staging with
	// collect_at <= now, and deleting ones whose retry time has come) to
	// deleting, in one transaction, re-checking for each that no pending or
	// active claim references it; a blob that is still referenced goes back
	// to committed instead. Returned blobs are deleting with collect_at =
	// now + retry: the caller deletes their objects, then calls
	// FinishCollect. If the caller dies, they come due again at the retry
	// time.
	BeginCollect(ctx context.Context, now time.Time, limit int, retry time.Duration) ([]Blob, error)

	// FinishCollect marks deleting blobs deleted (their objects are gone).
	// Blobs not in deleting are skipped.
	FinishCollect(ctx context.Context, ids []string, now time.Time) error

	// CollectFailed records a failed object delete: attempts+1, last error,
	// collect_at = retryAt.
	CollectFailed(ctx context.Context, id string, cause string, retryAt time.Time) error

	// OldestDue returns the earliest due time over claims and blobs, or
	// the zero time if nothing is due ever.
	OldestDue(ctx context.Context) (time.Time, error)

	// DueBacklog counts the claims (not held) and blobs due at or before
	// now, reading at most bound entries of each one's due index, and
	// answers at most bound: a figure for operators ("at least bound"),
	// never a scan of a backlog however large. The same read of the
	// claims' index, the first bound due claims by due time, is counted
	// per namespace too.
	DueBacklog(ctx context.Context, now time.Time, bound int) (DueBacklog, error)

	// TryLease takes or renews the named lease for holder until now+ttl.
	// It succeeds when the lease is free, expired at now, or already held
	// by holder, and reports false (no error) when another holder has it.
	// Jobs that need one runner across replicas hold a lease while they
	// run.
	TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)

	// ReleaseLease gives the lease up if holder has it.
	ReleaseLease(ctx context.Context, name, holder string) error

	// RequestLeaseRelease asks the named lease's holder, when it is not
	// holder, to give the lease up soon: the request stays on the lease
	// until it changes hands (a lease TryLease gives to a new holder
	// starts without one), and CheckLease reports it to the holder. A
	// free lease, or one holder has itself, is left as it is. Waiters for
	// a resumable upload's lock use it to make the request that holds
	// the lock, on whichever replica, end (ADR 0185).
	RequestLeaseRelease(ctx context.Context, name, holder string) error

	// Leases returns the leases live at now whose names begin with
	// prefix, by name: who holds each and whether another asked for it
	// (RequestLeaseRelease). A read. The dispatcher's replicas share the
	// subscriptions out by it (ADR 0285).
	Leases(ctx context.Context, prefix string, now time.Time) ([]LeaseHolding, error)

	// CheckLease reports whether holder has the named lease at now, and
	// whether another asked it to give the lease up since holder took
	// it. A read: it renews nothing.
	CheckLease(ctx context.Context, name, holder string, now time.Time) (held, releaseRequested bool, err error)

	// CommitExisting is the digest-first put: in one transaction, if a
	// committed or orphaned dedup candidate of (namespace, digest) with the
	// claim's size exists (created at or after DedupNotBefore), it inserts
	// the claim active on it (an orphaned one flips back to committed),
	// charges the claim's size and count to the namespace and returns
	// hit=true. Otherwise it changes nothing and returns hit=false (the
	// caller uploads). *QuotaError (nothing changed) when a hit would
	// exceed a quota. The candidate is the one the caller checked
	// (BlobID and Key) or, with Check, the one it finds and Check
	// accepts inside the transaction; without either, any candidate.
	CommitExisting(ctx context.Context, p CommitExistingParams) (res CommitResult, hit bool, err error)

	// Blobs returns up to limit blobs in any state with id > afterID, in
	// id order (the backstop's and fsck's paged walk).
	Blobs(ctx context.Context, afterID string, limit int) ([]Blob, error)

	// LiveRefs counts the pending and active claims referencing each of
	// the given blobs (absent ids count 0). Read-only.
	LiveRefs(ctx context.Context, blobIDs []string) (map[string]int64, error)

	// FixRefcounts recounts, in one transaction, the live claims of the
	// given blobs and repairs their refcount hints; a committed blob with
	// no live claim becomes orphaned with collect_at = now + grace. Blobs
	// in other states keep their state (collection re-checks claims
	// anyway). It returns the blobs it changed.
	FixRefcounts(ctx context.Context, blobIDs []string, now time.Time, grace time.Duration) ([]RefFix, error)

	// BlobsByKeys returns the blobs that are not deleted and own one of
	// the given object keys, by key.
	BlobsByKeys(ctx context.Context, keys []string) (map[string]Blob, error)

	// Cursor returns the named cursor ("" if unset); SetCursor stores it.
	// Paged jobs keep their position there to resume after a stop.
	Cursor(ctx context.Context, name string) (string, error)
	SetCursor(ctx context.Context, name, value string) error

	// AppendEvents appends events to the log (Seq is assigned; At comes
	// from the caller's clock); Events returns up to limit events with seq > afterSeq, in
	// order.
	AppendEvents(ctx context.Context, events []Event) error
	Events(ctx context.Context, afterSeq int64, limit int) ([]Event, error)

	HoldStore    // legal holds (holds.go)
	DataKeyStore // data keys of encrypted namespaces (datakeys.go)

	// Namespace returns a namespace's counters; a namespace without any
	// claim yet has zero counters (no error).
	Namespace(ctx context.Context, name string) (Namespace, error)

	// Ping checks that the database answers.
	Ping(ctx context.Context) error

	// Close releases the database.
	Close() error

	AuditStore // the events log of the audit trail (audit.go)

	QuotaStore        // namespace listings and the quota audit (quota.go)
	DeadLetterStore   // blobs parked after repeated delete failures (deadletter.go)
	TenantStore       // tenant usage over their namespaces (tenants.go)
	HistoryStore      // pruning of finished claims and collected blobs (history.go)
	LifetimeStore     // listing and extending claims (lifetime.go)
	IntegrityStore    // damaged blobs and their repair (integrity.go)
	InlineObjectStore // small objects kept in rows (inline.go)
}
