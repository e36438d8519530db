package claimcheck

import (
	"context"
	"io"
	"time"
)

// ResumableUploads is a direct upload whose bytes arrive in pieces over
// many requests, each continuing where the stored bytes end: a client
// whose connection breaks asks how far the store got and sends the
// rest. The HTTP API speaks it as the tus protocol (docs/HTTP.md,
// "Resumable uploads (tus)"; ADR 0115). *engine.Store implements it on
// storage that can append (file and S3).
//
// The upload is a pending claim from the start, like one of Uploads: its
// reservation, its deadline and its reaping are the same. Each append
// that stores bytes moves the deadline to confirm_within from then; an
// upload that makes no progress for that long is reaped (reason
// never_confirmed), everything it stored deleted and its reservation
// refunded. The append that stores the last byte completes it: size and
// sha256 are checked and the claim committed like a put, dedup,
// compression and encryption included.
type ResumableUploads interface {
	// StartResumable reserves quota for a payload of req.Size bytes in
	// namespace ns and returns the upload, at offset 0. The checks are a
	// put's: ErrTooLarge past max_size, ErrQuotaExceeded, and
	// ErrUnavailable when the storage cannot append.
	StartResumable(ctx context.Context, ns string, req ResumableRequest) (ResumableUpload, error)

	// ResumableUpload returns the upload's state: how many bytes are
	// stored, until when it waits for more, and its Ref once completed.
	// A reaped or aborted upload is a *GoneError; an id that names no
	// resumable upload is ErrNotFound.
	ResumableUpload(ctx context.Context, id string) (ResumableUpload, error)

	// AppendResumable stores body's bytes from offset, which must be
	// the upload's Offset (ErrInvalidArgument otherwise, with nothing
	// stored).
	// If body breaks off, the bytes that arrived are kept and the new
	// Offset returned with the error. With chunk set, the bytes are
	// kept only if they match it (ErrChecksumMismatch otherwise, the
	// offset unchanged). When the last byte arrives the upload
	// completes: a payload of another sha256 than declared fails with
	// ErrChecksumMismatch, and the upload is finished at once (nothing
	// stored, the reservation refunded).
	AppendResumable(ctx context.Context, id string, offset int64, body io.Reader, chunk ChunkChecksum) (ResumableUpload, error)

	// AbortResumable finishes a pending upload at once (reason aborted):
	// everything it stored is deleted and its reservation refunded. A
	// completed upload is ErrInvalidArgument (delete the claim instead);
	// an upload already finished, nothing.
	AbortResumable(ctx context.Context, id string) error
}

// ResumableLocks orders the requests of one resumable upload across
// every process that shares the store (replicas over one database): one
// request at a time appends to, reads or ends an upload, whichever
// replica it reached. *engine.Store implements it with a lease in the
// metadata store (ADR 0185).
type ResumableLocks interface {
	// LockResumable waits until the caller holds upload id's lock, or
	// ctx ends (ctx's error, nothing held). While it waits it asks the
	// holder, wherever it runs, to let go. While the lock is held,
	// release is called, once, when another request waits for it or
	// when the lock can no longer be kept (the metadata store cannot
	// renew it): the holder should end its request and unlock soon. The
	// lock stays held until unlock, which gives it up if it is still the
	// caller's; a holder that dies loses it when it expires.
	LockResumable(ctx context.Context, id string, release func()) (unlock func() error, err error)
}

// ResumableRequest is what a client declares when it starts a resumable
// upload.
type ResumableRequest struct {
	// Size is the payload's exact length in bytes.
	Size int64
	// Digest is "sha256:<hex>" of the whole payload, or empty: when set,
	// completion checks it.
	Digest      string
	ContentType string
}

// ResumableUpload is the state of a resumable upload. Its ID is the id
// of the claim the payload becomes.
type ResumableUpload struct {
	ID          string
	Namespace   string
	State       ClaimState // pending while bytes are awaited; active once completed
	Size        int64
	Offset      int64 // bytes stored so far
	Digest      string
	ContentType string
	// ExpiresAt is when a pending upload is reaped unless more bytes
	// arrive: confirm_within after the last progress.
	ExpiresAt time.Time
	// Ref is the claim's reference once the upload completed.
	Ref *Ref
}

// ChunkChecksum is a checksum one append's bytes must match.
type ChunkChecksum struct {
	// Algorithm is "sha256" or "sha1"; empty means no check.
	Algorithm string
	Sum       []byte
}

// ChunkAlgorithms are the algorithms a ChunkChecksum may name.
var ChunkAlgorithms = []string{"sha1", "sha256"}
