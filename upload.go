package claimcheck

import (
	"context"
	"time"
)

// Uploads is the direct-upload flow (docs/ARCHITECTURE.md, "Direct upload"): a client that has the
// bytes somewhere else (a browser, a phone) asks for an upload, PUTs the
// payload straight to the URL it gets, and confirms. Both *engine.Store
// (embedded) and client.Client (remote) implement it. It is kept apart
// from Claims because integrations that only put and redeem (Temporal,
// NATS, Kafka) have no use for it (ADR 0050).
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
