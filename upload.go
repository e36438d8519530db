package claimcheck

import (
	"context"
	"io"
	"time"
)

// Uploads is what a client uses that sends a payload from elsewhere
// rather than through Put: both *engine.Store (embedded) and
// client.Client (remote) implement it. It is kept apart from Claims
// because integrations that only put and redeem (Temporal, NATS, Kafka)
// have no use for it (ADR 0050).
//
// A direct upload (docs/ARCHITECTURE.md, "Direct upload"): a client that
// has the bytes somewhere else (a browser, a phone) asks for an upload,
// PUTs the payload straight to the URL it gets, and confirms.
//
// A resumable upload is a direct upload whose bytes arrive in pieces over
// many requests, each continuing where the stored bytes end: a client
// whose connection breaks asks how far the store got and sends the
// rest. The HTTP API speaks it as the tus protocol (docs/HTTP.md,
// "Resumable uploads (tus)"; ADR 0115). The embedded store takes it on
// storage that can append (file and S3). The upload is a pending claim
// from the start, like a direct upload: its reservation, its deadline and
// its reaping are the same. Each append that stores bytes moves the
// deadline to confirm_within from then; an upload that makes no progress
// for that long is reaped (reason never_confirmed), everything it stored
// deleted and its reservation refunded. The append that stores the last
// byte completes it: size and sha256 are checked and the claim committed
// like a put, dedup, compression and encryption included.
type Uploads interface {
	// InitUpload reserves quota for a payload of req.Size bytes with
	// digest req.Digest in namespace ns and returns where to PUT it. The
	// upload is a pending claim until ConfirmUpload; if it is not
	// confirmed by ConfirmBy, the sweeper finishes it (reason
	// never_confirmed), deletes whatever was uploaded and refunds the
	// reservation. With req.IdempotencyKey set, a repeated init with the
	// same key in the same namespace returns the same upload (with a
	// fresh URL while it is pending); a repeated key with another size or
	// digest fails with ErrInvalidArgument. Over quota: ErrQuotaExceeded,
	// naming the limit and the usage.
	InitUpload(ctx context.Context, ns string, req UploadRequest) (Upload, error)

	// ConfirmUpload checks the uploaded object's size and sha256 against
	// what InitUpload declared and commits it like a put (dedup applies).
	// A mismatch fails with ErrChecksumMismatch naming both values; the
	// upload stays pending (its reservation too) until it is uploaded
	// again and confirmed, or reaped. Nothing uploaded yet:
	// ErrInvalidArgument. After the deadline: a *GoneError with reason
	// never_confirmed. Confirming a confirmed upload returns its Ref again.
	ConfirmUpload(ctx context.Context, id string) (Ref, error)

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

// UploadRequest is what a client declares when it starts an upload.
type UploadRequest struct {
	// Size is the payload's exact length in bytes.
	Size int64
	// Digest is "sha256:<hex>" of the payload. Required: it is what
	// confirm checks, and what an S3 presigned URL is bound to.
	Digest        string
	ContentType   string
	Labels        map[string]string
	Consumers     int
	ConsumerNames []string
	// IdempotencyKey, when set, makes a repeated init return the same
	// upload (1 to 255 printable ASCII characters, unique per namespace).
	IdempotencyKey string
}

// Upload is a started direct upload: where to send the payload, and until
// when. Its ID is the id of the claim the payload becomes on confirm.
type Upload struct {
	ID        string     `json:"id"`
	Namespace string     `json:"ns"`
	State     ClaimState `json:"state"` // pending until confirmed; active after; deleted when reaped
	Size      int64      `json:"size"`
	Digest    string     `json:"digest"`
	// URL, Method and Headers are the request that uploads the payload:
	// send exactly Size bytes with these headers. The URL is the
	// credential (no API key is sent with it). Empty once the upload is
	// no longer pending. The embedded store sets them only for storage
	// that presigns (S3); otherwise it sets Token, and the HTTP API
	// answers a URL of its own built from the token.
	URL     string            `json:"url,omitempty"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Token is the credential of an upload the store receives itself
	// (file and memory storage): opaque, URL-safe, bound to this upload
	// and to ExpiresAt, signed with a key every replica shares. The
	// embedded store's ReceiveUpload takes it with the payload. It is
	// never on the wire: over HTTP it travels inside URL.
	Token string `json:"-"`
	// ExpiresAt is when the URL or token stops working (url_ttl after it
	// was issued, never after ConfirmBy).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// ConfirmBy is the deadline of ConfirmUpload (confirm_within after
	// init): after it the upload is reaped.
	ConfirmBy time.Time `json:"confirm_by,omitzero"`
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
