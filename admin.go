package claimcheck

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Admin is what operators use: legal holds, crypto-shredding and master
// key rotation, the dead letters, the audit trail and the namespaces'
// limits and usage. Both *engine.Store (embedded) and client.Client
// (remote) implement it. On the HTTP API these are admin keys' routes,
// except the namespace reads, which every key of the namespace may make,
// and each tenant's admins see their own namespaces only.
type Admin interface {
	// SetHold puts the claim on a legal hold (ADR 0065);
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
	// ADR 0066).
	DestroyNamespaceKey(ctx context.Context, ns string) error
	// RewrapDataKeys moves the live data keys to the current master key
	// (ADR 0075); the client does it one namespace at a time.
	RewrapDataKeys(ctx context.Context, opt RewrapOptions) (RewrapReport, error)

	// DeadLetters returns a page of dead letters (ADR
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
	// (Event, below). A ref with a namespace must match the claim's
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
	// (NamespaceInfo, below). ErrNotFound when the namespace is neither
	// configured (nor covered by the defaults) nor holds claims.
	Namespace(ctx context.Context, ns string) (NamespaceInfo, error)
	// Namespaces returns every configured namespace and every namespace
	// that holds or held claims, ordered by name.
	Namespaces(ctx context.Context) ([]NamespaceInfo, error)
}

// ErrHeld: the operation would delete data under a legal hold (the
// claim's own hold or its namespace's). Lift the hold first. On the wire
// it is the code "held" (409).
var ErrHeld = errors.New("held")

// Hold scopes.
const (
	HoldScopeClaim     = "claim"
	HoldScopeNamespace = "namespace"
)

// Hold is a legal hold that keeps a claim: while any hold is set, no
// expiry, release, delete-after-read, explicit delete or garbage
// collection deletes it or its bytes. ADR 0065.
type Hold struct {
	Scope  string    `json:"scope"` // HoldScopeClaim or HoldScopeNamespace
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}

// Encryption at rest (ADR 0066).
//
// Envelope encryption: each encrypted namespace has a random 256-bit data
// key, created on first use and stored in the metadata database wrapped
// (AES-256-GCM) by the master key from the config (master_key or
// CLAIMCHECK_MASTER_KEY). Objects are encrypted as they stream, after
// compression, with tink's streaming AEAD (AES-256-GCM-HKDF, 64 KiB
// segments): a fresh key per object derived from the data key and a random
// salt, and per-segment nonces made of a random prefix, the segment number
// and a last-segment flag, so a truncated, reordered or altered object
// fails authentication instead of yielding bytes. The associated data is
// the object key, which names the namespace, the blob and the data key, so
// an object copied under another key does not decrypt either.
//
// The object key records the encryption: NS/BLOBID.DATAKEYID. Plain
// objects are NS/BLOBID. Redeem takes the data key from there, so a policy
// change never makes old objects unreadable.
//
// Master key rotation (ADR 0075): master_key wraps new data
// keys, previous_master_keys only unwrap; each data key row names the
// master key that wrapped it, and RewrapDataKeys moves the rows to the
// current one.
//
// Crypto-shredding: DestroyNamespaceKey wipes the wrapped data key. Every
// object encrypted under it is then unreadable for good; a redeem answers
// a *GoneError with reason key_destroyed and finishes the claim.

// The encryption settings of a namespace policy.
const (
	EncryptionNone      = "none"
	EncryptionAES256GCM = "aes-256-gcm"
)

// Event is one entry of the audit trail: a lifecycle change of a claim
// (created, redeemed, released, expired, deleted, reaped), a legal hold
// set or lifted, an API key created or revoked, a finding of the garbage
// collector, or a failed authentication, with the actor that caused it
// (an API key id, "sweeper" for due work the store did by itself, "cli"
// for the offline commands, "" when unknown) and, for finished claims,
// the reason. Events of a claim or a namespace carry the namespace; the
// administrative events of a tenant (keys, failed authentications with
// one of its keys) carry the tenant.
type Event struct {
	Seq       int64     `json:"seq,string"` // a string in JSON (ADR 0273)
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"ns,omitempty"`
	Tenant    string    `json:"tenant,omitempty"`
	ClaimID   string    `json:"claim_id,omitempty"`
	BlobID    string    `json:"blob_id,omitempty"`
	Actor     string    `json:"actor,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Detail    string    `json:"detail,omitempty"`
}

// EventQuery selects a page of events.
type EventQuery struct {
	// After returns only events with Seq > After: pass the last Seq of the
	// previous page to get the next one.
	After int64
	// Since returns only events at or after this time (namespace queries).
	Since time.Time
	// Limit is the page size (default and maximum MaxEventPage).
	Limit int
}

// MaxEventPage bounds one page of events.
const MaxEventPage = 1000

// Check validates the query and returns its page size: MaxEventPage
// when Limit is zero or larger.
func (q EventQuery) Check() (int, error) {
	switch {
	case q.Limit < 0:
		return 0, invalidf("limit %d: must not be negative", q.Limit)
	case q.Limit == 0 || q.Limit > MaxEventPage:
		return MaxEventPage, nil
	}
	return q.Limit, nil
}

// DeadLetter is a blob whose object delete failed sweeper.max_attempts
// times and that the sweeper parked (ADR 0055). It keeps its row and its
// object, and the sweeper no longer retries it until an operator does.
// Quota is not involved: it was given back when the blob's last claim
// finished.
type DeadLetter struct {
	BlobID     string `json:"blob_id"`
	Namespace  string `json:"namespace"`
	ObjectKey  string `json:"object_key"`
	StoredSize int64  `json:"stored_size"`
	// Attempts and LastError are those of the failed deletes.
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error"`
	ParkedAt  time.Time `json:"parked_at"`
	// DeletingSince is when the blob's collection began.
	DeletingSince time.Time `json:"deleting_since"`
}

// DeadLetterQuery selects a page of dead letters. The zero value is the
// first page of every dead letter.
type DeadLetterQuery struct {
	// Tenant keeps the dead letters of the namespaces whose policy names
	// this tenant; a namespace that is no longer configured belongs to no
	// tenant. Over HTTP with auth on, it is the API key's tenant.
	Tenant string
	// Namespace keeps the dead letters of one namespace.
	Namespace string
	// After returns only dead letters with a blob id after it: pass the
	// previous page's Next.
	After string
	// Limit is the page size (default and maximum MaxDeadLetterPage).
	Limit int
}

// MaxDeadLetterPage bounds one page of dead letters, and so one batch of
// RetryDeadLetters.
const MaxDeadLetterPage = 500

// DeadLetterPage is a page of dead letters. Next is set when more may
// follow: pass it as the next query's After. A page can be short, even
// empty, and still have a Next (the tenant filter bounds its scan).
type DeadLetterPage struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
	Next        string       `json:"next,omitempty"`
}

// Check validates the query and returns its page size.
func (q DeadLetterQuery) Check() (int, error) {
	if q.Tenant != "" {
		if err := ValidateTenant(q.Tenant); err != nil {
			return 0, err
		}
	}
	if q.Namespace != "" {
		if err := ValidateNamespace(q.Namespace); err != nil {
			return 0, err
		}
	}
	if q.After != "" && !ValidBlobID(q.After) {
		return 0, invalidf("after %q: want a blob id (b_ and 22 characters), the next of the previous page", q.After)
	}
	switch {
	case q.Limit < 0:
		return 0, invalidf("limit %d: must not be negative", q.Limit)
	case q.Limit == 0 || q.Limit > MaxDeadLetterPage:
		return MaxDeadLetterPage, nil
	}
	return q.Limit, nil
}

// RewrapOptions selects what RewrapDataKeys works on.
type RewrapOptions struct {
	// Namespace limits the run to one namespace's key; "" is every
	// namespace.
	Namespace string
	// DryRun changes nothing: it reports what a run would do, and checks
	// that every key it would rewrap unwraps.
	DryRun bool
}

// RewrapReport is what RewrapDataKeys did (or, on a dry run, would do)
// to the live data keys it found. Destroyed keys are never listed.
type RewrapReport struct {
	// MasterKeyID is the current master key, the one keys are moved to.
	MasterKeyID string `json:"master_key_id"`
	DryRun      bool   `json:"dry_run"`
	// Rewrapped keys were wrapped by a previous master key and are now
	// wrapped by the current one (on a dry run: would be).
	Rewrapped int `json:"rewrapped"`
	// AlreadyCurrent keys were wrapped by the current master key already,
	// including those another process rewrapped during this run.
	AlreadyCurrent int `json:"already_current"`
	// Failed keys could not be rewrapped; Failures says why. Their master
	// key is not configured, or the wrapped key does not unwrap.
	Failed   int             `json:"failed"`
	Failures []RewrapFailure `json:"failures,omitempty"`
	// Destroyed keys were live when listed and destroyed before their
	// turn: left alone.
	Destroyed int `json:"destroyed"`
	// ByMasterKey counts the live data keys by the master key that wraps
	// them at the end of the run (on a dry run: now). A rotation is done
	// when only MasterKeyID is left.
	ByMasterKey map[string]int `json:"by_master_key"`
}

// Pending is the number of live keys left on master keys other than the
// current one.
func (r RewrapReport) Pending() int {
	n := 0
	for id, c := range r.ByMasterKey {
		if id != r.MasterKeyID {
			n += c
		}
	}
	return n
}

// RewrapFailure is one key RewrapDataKeys could not rewrap.
type RewrapFailure struct {
	Namespace   string `json:"namespace"`
	KeyID       string `json:"key_id"`
	MasterKeyID string `json:"master_key_id"`
	Error       string `json:"error"`
}

// NamespaceInfo is what an operator sees of a namespace: its policy, its
// quota limits and what it uses now. GET /v1/namespaces/{ns} answers it
// and `claimcheck ns ls|show` prints it.
type NamespaceInfo struct {
	Name   string `json:"name"`
	Policy Policy `json:"policy"`
	// Limits is the namespace's quota (the policy's quota; zero means
	// unlimited).
	Limits Quota `json:"limits"`
	// Usage is counted by the same transactions that create, commit and
	// finish claims, so it is exact, not an estimate.
	Usage NamespaceUsage `json:"usage"`
	// Retired is set for a namespace that still holds claims but that
	// the config no longer names (and defaults are off): its claims live
	// out their deadlines, new puts are refused, Policy is empty.
	Retired bool `json:"retired,omitempty"`
	// Tenant is the quota and usage of the tenant the namespace belongs
	// to, summed over all its namespaces: a put must fit both.
	Tenant *TenantInfo `json:"tenant,omitempty"`
}

// NamespaceUsage is a namespace's quota consumption.
type NamespaceUsage struct {
	// UsedBytes is the sum of the original sizes of the active claims.
	UsedBytes int64 `json:"used_bytes"`
	// ReservedBytes is held by pending claims: puts being written and
	// direct uploads not yet confirmed. It turns into usage on commit
	// and is given back, once, when a pending claim is reaped.
	ReservedBytes int64 `json:"reserved_bytes"`
	ActiveClaims  int64 `json:"active_claims"`
	PendingClaims int64 `json:"pending_claims"`
	// FinishedClaims counts the namespace's claims finished for any
	// reason (expired, deleted, released, never confirmed), kept in the
	// transaction that finishes each: history, not quota. Claims finished
	// before the version that added it are not counted.
	FinishedClaims int64 `json:"finished_claims"`
}

// DefaultTenant owns every namespace whose policy names no tenant. It
// always exists, declared or not, so a config without a tenants section
// (the embedded single-user default) has exactly one tenant.
const DefaultTenant = "default"

// TenantPolicy is a tenant's entry in the config's tenants section. A
// tenant owns API keys and namespaces and is the unit of isolation: a key
// of one tenant never sees another tenant's claims.
//
//	tenants:
//	  acme: { quota: { bytes: 1TiB, claims: 10000000 } }
//	namespaces:
//	  video-processing: { tenant: acme }
type TenantPolicy struct {
	// Quota limits the tenant's namespaces together. Zero means unlimited.
	Quota Quota `yaml:"quota" json:"quota"`
}

// Validate checks a tenant policy; the error names the field.
func (t TenantPolicy) Validate() error {
	if t.Quota.Bytes < 0 {
		return fieldErr("quota.bytes", t.Quota.Bytes.String(), "must not be negative")
	}
	if t.Quota.Claims < 0 {
		return fieldErr("quota.claims", strconv.FormatInt(t.Quota.Claims, 10), "must not be negative")
	}
	return nil
}

// ValidateTenant checks a tenant name. Tenant names follow the namespace
// rules (lowercase letters, digits, '-' and '_', at most 24 characters),
// so they are safe in logs, metrics labels and key prefixes alike.
func ValidateTenant(name string) error {
	switch {
	case name == "":
		return invalidf("tenant: empty name")
	case len(name) > MaxNamespaceLen:
		return invalidf("tenant %q: longer than %d characters", name, MaxNamespaceLen)
	case !validName(name):
		return invalidf("tenant %q: use lowercase letters, digits, '-' and '_', starting and ending with a letter or digit", name)
	}
	return nil
}

// TenantInfo is a tenant's quota and its usage over all its namespaces.
type TenantInfo struct {
	Name string `json:"name"`
	// Limits is the tenant's quota from the tenants section (zero:
	// unlimited). It is checked in the same transaction as the
	// namespace's own quota, on every reservation and commit.
	Limits Quota `json:"limits"`
	// Usage sums the usage of the tenant's namespaces.
	Usage      NamespaceUsage `json:"usage"`
	Namespaces int64          `json:"namespaces"`
}
