package server

import (
	"context"
	"io"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Store is what the server is given: the three interfaces of the
// contract (claims, uploads, admin), which every claimcheck store
// implements, and what only the HTTP server needs of the embedded
// *engine.Store besides. The server holds it as it is and asks it for no
// other interface: every route is served by one of these methods.
type Store interface {
	claimcheck.Claims
	claimcheck.Uploads
	claimcheck.Admin

	// The subscriptions of a tenant and its live stream of events
	// (subscriptions.go, ADR 0240).
	subscriptionStore

	// OldestDue is the earliest due time over claims and blobs, the zero
	// time when nothing is due ever: what GET /v1/sweeper measures the
	// sweeper's lag from (sweeper.go).
	OldestDue(ctx context.Context) (time.Time, error)
	// DueBacklog is the number of claims and blobs due now, counted up
	// to the bound it answers (engine.DueBacklogBound): a bounded read of
	// the due indexes, never a scan of the backlog. The same read of the
	// claims' index is counted per namespace (byNamespace); capped says
	// it stopped at the bound.
	DueBacklog(ctx context.Context) (n, bound int64, byNamespace map[string]int64, capped bool, err error)

	// PutWithPolicy is Put that also answers the effective policy of ns
	// the put was stored under, so that one call gives the server both
	// the Ref and the Claimcheck-Digest-First answer (ADR 0155).
	PutWithPolicy(ctx context.Context, ns string, body io.Reader, opts claimcheck.PutOptions) (claimcheck.Ref, claimcheck.Policy, error)

	// RedeemEncoded opens the claim's payload in the form it is stored
	// in, still compressed, so that a redeem can be answered with
	// Content-Encoding: zstd to a client that decodes and verifies the
	// payload itself: neither side decompresses twice and the wire
	// carries the compressed bytes (ADR 0136). It counts as a read like
	// Redeem. If the payload is stored in encoding (only
	// claimcheck.EncodingZstd is known), Encoded.Encoding is that
	// encoding and Read gives the stored frames, decrypted but not
	// decompressed: their count is checked against the stored size, and
	// every frame carries its own checksum, but the payload's size and
	// sha256 are for the reader to check once decoded. If it is stored
	// uncompressed and encoding is EncodingZstd or EncodingIdentity,
	// Encoding is EncodingIdentity and Read gives the payload's bytes as
	// stored, their count checked, their sha256 for the reader to check.
	// Otherwise Encoding is empty and Read gives the payload as Redeem
	// does, verified.
	RedeemEncoded(ctx context.Context, ref claimcheck.Ref, encoding string) (*claimcheck.Encoded, error)

	// ReceiveUpload takes the payload of a direct upload that the store
	// receives itself (file and memory storage), whose InitUpload
	// answered a claimcheck.Upload with a Token instead of a URL: the
	// server hands it the body of a PUT to the data route. The store
	// checks the token (signature, expiry, that it names upload id;
	// refusals are claimcheck.ErrPermissionDenied) and the body
	// (ErrTooLarge, ErrInvalidArgument when short, ErrChecksumMismatch)
	// and leaves nothing visible when it refuses. The server knows
	// nothing of the token but where it goes in the URL (ADR 0078).
	ReceiveUpload(ctx context.Context, id, token string, contentLength int64, body io.Reader) error

	// LockResumable orders the requests of one resumable upload across
	// every process that shares the store (replicas over one database):
	// one request at a time appends to, reads or ends an upload,
	// whichever replica it reached (a lease in the metadata store, ADR
	// 0185). It waits until the caller holds upload id's lock, or ctx
	// ends (ctx's error, nothing held). While it waits it asks the
	// holder, wherever it runs, to let go. While the lock is held,
	// release is called, once, when another request waits for it or
	// when the lock can no longer be kept (the metadata store cannot
	// renew it): the holder should end its request and unlock soon. The
	// lock stays held until unlock, which gives it up if it is still the
	// caller's; a holder that dies loses it when it expires.
	LockResumable(ctx context.Context, id string, release func()) (unlock func() error, err error)
}
