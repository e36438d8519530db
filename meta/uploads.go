package meta

import (
	"context"
	"time"
)

// Upload is what a direct upload (init → client PUT → confirm) keeps
// beside its pending claim: what the client declared at init, so that
// confirm can check the object the client wrote, and the idempotency key
// that makes a repeated init return the same upload. The claim carries
// the state and the due time (the confirm deadline); an Upload row never
// changes after it is created.
type Upload struct {
	ClaimID        string // also the upload's id
	Namespace      string
	BlobID         string // the claim's staging blob
	Key            string // the staging blob's object key: where the client writes
	Size           int64  // declared size in bytes
	Digest         string // declared "sha256:<hex>"
	ContentType    string
	IdempotencyKey string // "" when the client sent none
	CreatedAt      time.Time
}

// UploadStore is the part of Store that direct uploads add.
//
// An upload is created in two transactions, in this order: CreatePending
// (quota reserved, staging blob and pending claim with the confirm
// deadline as due time), then CreateUpload. A failure or crash between
// the two leaves a pending claim that the sweeper finishes at its due
// time like any unfinished put, so no row is ever stranded, and an Upload
// row never exists without its claim.
type UploadStore interface {
	// CreateUpload records u for the pending claim u.ClaimID. When
	// u.IdempotencyKey is set and (namespace, key) already names another
	// upload, nothing is inserted and that upload is returned with
	// created=false: concurrent inits with one key all get the same
	// upload, and the losers finish their own claims. ErrNotFound if the
	// claim does not exist.
	CreateUpload(ctx context.Context, u Upload) (got Upload, created bool, err error)

	// Upload loads the upload of claim id. ErrNotFound if the claim is
	// not a direct upload (or does not exist).
	Upload(ctx context.Context, id string) (Upload, error)

	// UploadByKey loads the upload with idempotency key key in namespace
	// ns. ErrNotFound if there is none.
	UploadByKey(ctx context.Context, ns, key string) (Upload, error)

	// Secret returns the secret stored under name, storing candidate
	// first if there is none yet. Every caller, in every process sharing
	// the database, gets the same value, however many race to create it.
	Secret(ctx context.Context, name string, candidate []byte) ([]byte, error)
}

// ResumableUpload is a direct upload whose bytes arrive in appends over
// many requests (ADR 0115): its Upload row, how many bytes are stored,
// and the storage's handle on the object being built.
type ResumableUpload struct {
	Upload
	// Received is the number of bytes stored so far: the offset the
	// next append continues from. Only RecordReceived moves it; bytes
	// the storage holds past it count as never written.
	Received int64
	// Handle is the storage's handle on the incomplete object, kept on
	// the staging blob (Blob.AppendHandle), so that collecting the blob
	// aborts it.
	Handle string
	// HashState is the running sha256 (its marshalled state) over the
	// first HashedTo bytes; it stands for the payload only while
	// HashedTo == Received.
	HashState []byte
	HashedTo  int64
}

// Received is an append's progress, for RecordReceived.
type Received struct {
	ID, BlobID string
	From, To   int64 // the offset recorded before, and the new one
	// HashState, when set, is the running sha256 over the first To
	// bytes; nil leaves the saved one (which then no longer covers the
	// upload).
	HashState []byte
	DueAt     time.Time
	Now       time.Time
}

// ResumableStore is the part of Store that resumable uploads add. Such
// an upload is created like a direct upload (CreatePending first), then
// the storage is asked for a handle, then CreateResumable records
// everything else in one transaction. Completion is the direct upload's
// Commit; the reaper and the sweeper's collection treat it like any
// pending claim and staging blob, aborting the handle with the object.
type ResumableStore interface {
	// CreateResumable records u (its Digest may be empty: nothing
	// declared), progress at 0 bytes, and handle on the staging blob
	// u.BlobID, in one transaction. ErrNotFound if the claim does not
	// exist, ErrConflict if it is not pending, is not on u.BlobID, or
	// has an upload already.
	CreateResumable(ctx context.Context, u Upload, handle string) error

	// Resumable loads the resumable upload of claim id. ErrNotFound if
	// the claim has none (or does not exist).
	Resumable(ctx context.Context, id string) (ResumableUpload, error)

	// RecordReceived moves the upload's received bytes from p.From to
	// p.To (with the running hash, when given), and raises the claim's
	// due time and its staging blob's collect time to p.DueAt (never
	// lowering them), in one transaction: the deadline of an upload
	// follows its progress. ErrConflict, with nothing changed, if the
	// claim is no longer pending or another append moved the count first
	// (received ≠ p.From); ErrNotFound if there is no such upload.
	RecordReceived(ctx context.Context, p Received) error

	// Restage moves the pending claim p.ClaimID from its staging blob
	// p.From to the new staging blob p.To (inserted here, its collect
	// time the claim's due time), and orphans p.From, to be collected at
	// p.FromCollectAt, in one transaction. A payload rewritten after it
	// arrived (a resumable upload compressed or encrypted on completion)
	// so gets its new object owned by a row before the first byte is
	// written, while the old object stays owned until it is collected.
	// ErrConflict, with nothing changed, if the claim is not pending on
	// p.From.
	Restage(ctx context.Context, p RestageParams) error
}

// RestageParams are the arguments of ResumableStore.Restage.
type RestageParams struct {
	ClaimID       string
	From          string // the staging blob the claim leaves
	To            Blob   // the new staging blob: ID, Namespace, Key, CreatedAt
	FromCollectAt time.Time
	Now           time.Time
}
