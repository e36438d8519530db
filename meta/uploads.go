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
