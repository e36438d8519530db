package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// maxIdempotencyKey bounds idempotency keys.
const maxIdempotencyKey = 255

// uploadSecretName names the key that signs upload tokens in the
// metadata store's secrets: generated once, shared by every process on
// the database. (The name dates from when it signed URLs; renaming the
// row would rotate the key for nothing.)
const uploadSecretName = "upload_url_hmac"

// uploads is the Store's direct-upload state: the token-signing key,
// loaded on first use.
type uploads struct {
	mu     sync.Mutex
	secret []byte
}

// InitUpload starts a direct upload; see Uploads.
//
// It reuses the put protocol's first step: CreatePending reserves the
// quota and inserts the staging blob and the pending claim, due at
// init + confirm_within with reason never_confirmed, in one transaction.
// Only then is the upload row written (meta.UploadStore), so a crash in
// between leaves an ordinary pending claim that the sweeper reaps.
func (s *Store) InitUpload(ctx context.Context, ns string, req claimcheck.UploadRequest) (claimcheck.Upload, error) {
	ctx, sp := s.startOp(ctx, spanUploadInit, ns)
	v, err := s.initUpload(ctx, ns, req)
	tracing.End(sp, err)
	return v, err
}

// initUpload is InitUpload inside its span (tracing.go).
func (s *Store) initUpload(ctx context.Context, ns string, req claimcheck.UploadRequest) (claimcheck.Upload, error) {
	s.touch()
	op := "init upload to " + ns
	pol, err := s.Policy(ctx, ns)
	if err != nil {
		return claimcheck.Upload{}, fmt.Errorf("init upload: %w", err)
	}
	if req.Digest == "" {
		return claimcheck.Upload{}, fmt.Errorf("%s: %w", op, invalidf("sha256: required (the digest confirm checks the upload against)"))
	}
	if pol.Encrypted() {
		// A presigned upload writes the client's bytes as they are;
		// encryption at rest happens only on the put path (crypt.go).
		return claimcheck.Upload{}, fmt.Errorf("%s: %w", op, invalidf("namespace %s encrypts at rest (encryption: aes-256-gcm), and a direct upload would store the bytes unencrypted: use put", ns))
	}
	if err := checkIdempotencyKey(req.IdempotencyKey); err != nil {
		return claimcheck.Upload{}, fmt.Errorf("%s: %w", op, err)
	}
	opts := claimcheck.PutOptions{Size: req.Size, Digest: req.Digest, ContentType: req.ContentType,
		Labels: req.Labels, Consumers: req.Consumers, ConsumerNames: req.ConsumerNames}
	consumers, err := checkPutOptions(&opts, pol)
	if err != nil {
		return claimcheck.Upload{}, fmt.Errorf("%s: %w", op, err)
	}
	if req.IdempotencyKey != "" {
		up, err := s.meta.UploadByKey(ctx, ns, req.IdempotencyKey)
		if err == nil {
			return s.existingUpload(ctx, op, up, req, pol)
		}
		if !errors.Is(err, meta.ErrNotFound) {
			return claimcheck.Upload{}, metaErr(op, err)
		}
	}

	now := s.clock.Now()
	claim, staging, err := s.createPendingUpload(ctx, ns, pol, opts, consumers, now)
	if err != nil {
		return claimcheck.Upload{}, metaErr(op, err)
	}
	blobID, confirmBy := claim.BlobID, claim.DueAt
	up, created, err := s.meta.CreateUpload(ctx, meta.Upload{
		ClaimID: claim.ID, Namespace: ns, BlobID: blobID, Key: staging.Key,
		Size: req.Size, Digest: req.Digest, ContentType: req.ContentType,
		IdempotencyKey: req.IdempotencyKey, CreatedAt: now,
	})
	if err != nil || !created {
		// Our claim is not needed (a concurrent init with the same key
		// won) or could not be completed: finish it now, which refunds
		// its reservation; if even that fails it is reaped when due.
		s.abortUpload(ctx, claim.ID)
		if err != nil {
			return claimcheck.Upload{}, metaErr(op, err)
		}
		return s.existingUpload(ctx, op, up, req, pol)
	}
	s.metrics.uploadsStarted.WithLabelValues(ns).Inc()
	return s.issue(ctx, up, meta.ClaimPending, confirmBy, pol)
}

// createPendingUpload is the first step of every upload, direct or
// resumable, and the put protocol's (write.go, step 1): CreatePending
// reserves the quota and inserts the staging blob and the pending claim,
// due at now + confirm_within (never past max_age) with reason
// never_confirmed, in one transaction. opts went through
// checkPutOptions, which gave consumers. The staging blob's key is
// always a plain object's: a direct upload stores the client's bytes as
// they are, and a resumable upload that encrypts writes them again into
// a restaged blob at completion.
func (s *Store) createPendingUpload(ctx context.Context, ns string, pol claimcheck.Policy, opts claimcheck.PutOptions, consumers int, now time.Time) (meta.Claim, meta.Blob, error) {
	rows := s.stage(ctx, stageParams{ns: ns, pol: pol, opts: opts, consumers: consumers,
		now: now, dueReason: meta.ReasonNeverConfirmed})
	err := s.meta.CreatePending(ctx, rows)
	return rows.Claim, rows.Blob, err
}

// abortUpload finishes an upload claim that init gave up on.
func (s *Store) abortUpload(ctx context.Context, id string) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if _, _, err := s.meta.FinishClaim(cctx, id, meta.ReasonAborted, s.clock.Now(), false); err != nil {
		s.log.WarnContext(ctx, "init upload: could not finish an abandoned upload claim; the sweeper will", "claim", id, "err", err)
	}
}

// existingUpload answers an init whose idempotency key names upload up.
func (s *Store) existingUpload(ctx context.Context, op string, up meta.Upload, req claimcheck.UploadRequest, pol claimcheck.Policy) (claimcheck.Upload, error) {
	if up.Size != req.Size || up.Digest != req.Digest {
		return claimcheck.Upload{}, fmt.Errorf("%s: %w", op, invalidf("idempotency key %q was used for an upload of %d bytes with digest %s, not %d bytes with digest %s",
			req.IdempotencyKey, up.Size, up.Digest, req.Size, req.Digest))
	}
	c, err := s.load(ctx, op, claimcheck.Ref{ID: up.ClaimID}, true)
	if err != nil {
		return claimcheck.Upload{}, err
	}
	return s.issue(ctx, up, c.State, c.DueAt, pol)
}

// issue describes upload up in state st, with a fresh place to send the
// payload while it is pending: a presigned URL on S3, otherwise an upload
// token that ReceiveUpload accepts (the HTTP server turns it into a URL
// of its own; the engine knows no routes).
func (s *Store) issue(ctx context.Context, up meta.Upload, st meta.ClaimState, confirmBy time.Time, pol claimcheck.Policy) (claimcheck.Upload, error) {
	u := claimcheck.Upload{ID: up.ClaimID, Namespace: up.Namespace, State: claimcheck.ClaimState(st), Size: up.Size, Digest: up.Digest}
	if st != meta.ClaimPending {
		return u, nil
	}
	u.ConfirmBy = confirmBy
	now := s.clock.Now()
	u.ExpiresAt = minTime(now.Add(pol.Uploads.URLTTL.D()), confirmBy)
	ttl := u.ExpiresAt.Sub(now)
	if ttl <= 0 {
		return u, nil // due now: the sweeper or the next load finishes it
	}
	if p := blob.AbilitiesOf(s.blobs).Presigner; p != nil {
		// S3: the URL is signed over the length and the checksum, so the
		// service itself refuses other bytes. Whole seconds: SigV4
		// expiries are.
		ttl = ttl.Truncate(time.Second)
		u.ExpiresAt = now.Add(ttl)
		pp, err := p.PresignPut(ctx, up.Key, up.Size, strings.TrimPrefix(up.Digest, "sha256:"), ttl)
		if err != nil {
			return claimcheck.Upload{}, fmt.Errorf("init upload %s: %w: %v", up.ClaimID, claimcheck.ErrUnavailable, err)
		}
		u.URL, u.Method, u.Headers = pp.URL, pp.Method, pp.Headers
		return u, nil
	}
	secret, err := s.uploadSecret(ctx)
	if err != nil {
		return claimcheck.Upload{}, err
	}
	// Whole seconds, as the token writes it: ExpiresAt never promises
	// more than the token grants.
	u.ExpiresAt = u.ExpiresAt.Truncate(time.Second)
	u.Token = newUploadToken(secret, up.ClaimID, u.ExpiresAt)
	return u, nil
}

// uploadSecret returns the key that signs the upload tokens of the
// uploads the store receives itself. It is generated once and kept in the
// metadata database, so every replica on the database, and every
// restart, signs and checks with the same key (ADR 0050, ADR 0078).
func (s *Store) uploadSecret(ctx context.Context) ([]byte, error) {
	s.uploads.mu.Lock()
	defer s.uploads.mu.Unlock()
	if s.uploads.secret != nil {
		return s.uploads.secret, nil
	}
	candidate := make([]byte, 32)
	rand.Read(candidate)
	secret, err := s.meta.Secret(ctx, uploadSecretName, candidate)
	if err != nil {
		return nil, metaErr("upload token key", err)
	}
	s.uploads.secret = secret
	return secret, nil
}

// ReceiveUpload writes body as the payload of upload id, which the store
// receives itself (file and memory storage; on S3 the client PUTs to the
// bucket instead). token is the upload's Token from InitUpload: the
// credential, checked before anything is read. contentLength is the
// body's declared length, -1 when unknown.
//
// A missing, malformed, altered or expired token, or one issued for
// another upload, fails with ErrPermissionDenied; a body larger than
// declared with ErrTooLarge (at once when contentLength says so),
// shorter with ErrInvalidArgument, other bytes with ErrChecksumMismatch.
// In every failure nothing becomes visible.
//
// The object is written uncompressed, as uploaded, exactly like an S3
// presigned PUT would write it (ADR 0050), through the put's own writer,
// limited to the declared size and checked against the declared digest
// before it becomes visible.
func (s *Store) ReceiveUpload(ctx context.Context, id, token string, contentLength int64, body io.Reader) error {
	ctx, sp := s.startOpOn(ctx, spanUploadReceive, id)
	err := s.receiveUpload(ctx, id, token, contentLength, body)
	tracing.End(sp, err)
	return err
}

// receiveUpload is ReceiveUpload inside its span (tracing.go).
func (s *Store) receiveUpload(ctx context.Context, id, token string, contentLength int64, body io.Reader) error {
	op := "upload " + id
	if !claimcheck.ValidClaimID(id) {
		return fmt.Errorf("%s: %w", op, invalidf("upload id %q is malformed", id))
	}
	secret, err := s.uploadSecret(ctx)
	if err != nil {
		return err
	}
	if err := checkUploadToken(secret, token, id, s.clock.Now()); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	up, err := s.meta.Upload(ctx, id)
	if err != nil {
		return metaErr(op, err)
	}
	if contentLength > up.Size {
		return fmt.Errorf("%s: %w: Content-Length %d is more than the %d bytes declared at init", op, claimcheck.ErrTooLarge, contentLength, up.Size)
	}
	c, err := s.load(ctx, op, claimcheck.Ref{ID: id}, false)
	if err != nil {
		return err
	}
	if c.State != meta.ClaimPending {
		return fmt.Errorf("%s: %w", op, invalidf("the upload is already confirmed; nothing more can be uploaded"))
	}
	pol := claimcheck.Policy{Compression: claimcheck.CompressionNone, MaxSize: claimcheck.Size(up.Size)}
	_, err = s.writeObject(ctx, body, writeParams{key: up.Key, pol: pol,
		opts: claimcheck.PutOptions{Size: up.Size, Digest: up.Digest}})
	if errors.Is(err, claimcheck.ErrTooLarge) {
		return fmt.Errorf("%s: %w: the body is larger than the %d bytes declared at init", op, claimcheck.ErrTooLarge, up.Size)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	// The reaper may have finished the claim and collected its staging
	// blob while the body streamed, or a confirm deduplicated it onto
	// another blob: then nothing owns this object any more, so delete it
	// rather than leave debris for the backstop.
	if c, err := s.meta.Claim(ctx, id); err == nil && (c.State == meta.ClaimDeleted || c.BlobID != up.BlobID) {
		s.discardObject(ctx, up.Key)
		if c.State == meta.ClaimDeleted {
			return fmt.Errorf("%s: %w", op, goneOf(c))
		}
	}
	return nil
}

// ConfirmUpload commits an uploaded payload; see Uploads. The claim's
// pending → active step is the put's own Commit, a compare-and-swap on
// pending, and so is the reaper's finish: whichever comes second loses,
// so exactly one of them wins and the reservation is refunded or turned
// into usage exactly once.
func (s *Store) ConfirmUpload(ctx context.Context, id string) (claimcheck.Ref, error) {
	ctx, sp := s.startOpOn(ctx, spanUploadConfirm, id)
	v, err := s.confirmUpload(ctx, id)
	tracing.End(sp, err)
	return v, err
}

// confirmUpload is ConfirmUpload inside its span (tracing.go).
func (s *Store) confirmUpload(ctx context.Context, id string) (claimcheck.Ref, error) {
	start := s.clock.Now()
	op := "confirm upload " + id
	if !claimcheck.ValidClaimID(id) {
		return claimcheck.Ref{}, fmt.Errorf("confirm upload: %w", invalidf("upload id %q is malformed", id))
	}
	s.touch()
	up, err := s.meta.Upload(ctx, id)
	if err != nil {
		return claimcheck.Ref{}, metaErr(op, err)
	}
	pol, err := s.Policy(ctx, up.Namespace)
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("%s: %w", op, err)
	}
	c, err := s.load(ctx, "confirm upload", claimcheck.Ref{ID: id}, false)
	if err != nil {
		return claimcheck.Ref{}, err
	}
	if c.State == meta.ClaimActive {
		return s.confirmedRef(ctx, op, c)
	}

	size, digest, blocks, err := s.hashStored(ctx, up)
	if err != nil || size != up.Size || digest != up.Digest {
		// The reaper may have finished the upload and deleted its object
		// while we read it: then the answer is gone, not a mismatch.
		if _, lerr := s.load(ctx, "confirm upload", claimcheck.Ref{ID: id}, false); lerr != nil {
			return claimcheck.Ref{}, lerr
		}
	}
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("%s: %w", op, err)
	}
	retry := c.DueAt.UTC().Format(time.RFC3339)
	if size != up.Size || digest != up.Digest {
		// Wrong bytes are deleted, so the client can PUT again: the
		// upload URLs of GCS and Azure store any body, and only create
		// an object that does not exist, so that nobody can change it
		// once it is confirmed (ADR 0230). The key is this upload's own.
		if derr := s.blobs.Delete(ctx, up.Key); derr != nil {
			s.log.WarnContext(ctx, "confirm upload: deleting the object with the wrong bytes failed; a new PUT may be refused until the upload is reaped", "upload", id, "err", derr)
		}
	}
	if size != up.Size {
		return claimcheck.Ref{}, fmt.Errorf("%s: %w: the uploaded object has %d bytes, %d were declared (upload it again and confirm before %s)",
			op, claimcheck.ErrChecksumMismatch, size, up.Size, retry)
	}
	if digest != up.Digest {
		return claimcheck.Ref{}, fmt.Errorf("%s: %w: the uploaded object hashes to %s, %s was declared (upload it again and confirm before %s)",
			op, claimcheck.ErrChecksumMismatch, digest, up.Digest, retry)
	}

	w := written{key: up.Key, digest: digest, size: size, stored: size,
		compression: string(claimcheck.CompressionNone), blocks: blocks}
	res, err := s.commitWritten(ctx, commitParams{
		op: op, ns: up.Namespace, claim: c, blobID: up.BlobID, w: w, pol: pol,
		// The object was just read whole and matched size and digest:
		// it may repair a damaged blob of the same content (integrity.go).
		verified:  true,
		confirmed: true,
	})
	if errors.Is(err, meta.ErrConflict) {
		// Lost the compare-and-swap: the reaper finished the claim, or a
		// concurrent confirm committed it.
		c, lerr := s.load(ctx, "confirm upload", claimcheck.Ref{ID: id}, false)
		if lerr != nil {
			return claimcheck.Ref{}, lerr
		}
		return s.confirmedRef(ctx, op, c)
	}
	if err != nil {
		return claimcheck.Ref{}, err
	}
	s.metrics.uploadsConfirmed.WithLabelValues(up.Namespace).Inc()
	s.committed(ctx, up.Namespace, res, w, start)
	return refOf(res.Claim, res.Blob), nil
}

// confirmedRef is the Ref of an upload that is already confirmed.
func (s *Store) confirmedRef(ctx context.Context, op string, c meta.Claim) (claimcheck.Ref, error) {
	if c.State != meta.ClaimActive {
		return claimcheck.Ref{}, fmt.Errorf("%s: %w: the upload is %s", op, claimcheck.ErrUnavailable, c.State)
	}
	b, err := s.meta.Blob(ctx, c.BlobID)
	if err != nil {
		return claimcheck.Ref{}, metaErr(op, err)
	}
	return refOf(c, b), nil
}

// checkIdempotencyKey validates an idempotency key: 1 to 255 printable
// ASCII characters, or empty for none.
func checkIdempotencyKey(k string) error {
	if len(k) > maxIdempotencyKey {
		return invalidf("idempotency key: %d characters, at most %d", len(k), maxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return invalidf("idempotency key %q: printable ASCII without spaces only", k)
		}
	}
	return nil
}
