package engine

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// Resumable uploads (ADR 0115): a direct upload whose bytes arrive in
// appends. The rows are a direct upload's (a pending claim, its staging
// blob, an uploads row) plus the bytes received so far and the
// storage's append handle on the staging blob. The invariant: every
// byte the storage holds for an upload is owned by its staging blob's
// row (the object at its key and, through the handle, what the storage
// keeps beside it), so the reaper and the sweeper's collection remove
// it from the row alone, and the received count in the database is the
// only offset there is.

// appender returns the storage's append ability.
func (s *Store) appender(op string) (blob.Appender, error) {
	ap := blob.AbilitiesOf(s.blobs).Appender
	if ap == nil {
		return nil, fmt.Errorf("%s: %w: this store's object storage cannot append (resumable uploads need file or S3 storage)", op, claimcheck.ErrUnavailable)
	}
	return ap, nil
}

// StartResumable starts a resumable upload; see claimcheck.Uploads.
//
// Like InitUpload it reuses the put's first step (CreatePending), then
// asks the storage for an append handle, then records the upload with
// the handle on the staging blob in one transaction. A crash between the
// last two leaves a handle no row knows (an S3 multipart upload without
// a byte: the bucket's abort-incomplete lifecycle rule removes it); every
// failure short of a crash aborts it at once.
func (s *Store) StartResumable(ctx context.Context, ns string, req claimcheck.ResumableRequest) (claimcheck.ResumableUpload, error) {
	ctx, sp := s.startOp(ctx, spanTusStart, ns)
	v, err := s.startResumable(ctx, ns, req)
	tracing.End(sp, err)
	return v, err
}

// startResumable is StartResumable inside its span (tracing.go).
func (s *Store) startResumable(ctx context.Context, ns string, req claimcheck.ResumableRequest) (claimcheck.ResumableUpload, error) {
	s.touch()
	op := "start resumable upload to " + ns
	ap, err := s.appender(op)
	if err != nil {
		return claimcheck.ResumableUpload{}, err
	}
	pol, err := s.Policy(ctx, ns)
	if err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", op, err)
	}
	opts := claimcheck.PutOptions{Size: req.Size, Digest: req.Digest, ContentType: req.ContentType}
	consumers, err := checkPutOptions(&opts, pol)
	if err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", op, err)
	}
	if pol.Encrypted() {
		// Created now, not on completion: a namespace whose key was
		// destroyed refuses before any byte is sent.
		if _, err := s.namespaceKey(ctx, ns); err != nil {
			return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", op, err)
		}
	}

	now := s.clock.Now()
	claim, staging, err := s.createPendingUpload(ctx, ns, pol, opts, consumers, now)
	if err != nil {
		return claimcheck.ResumableUpload{}, metaErr(op, err)
	}
	blobID, confirmBy := claim.BlobID, claim.DueAt
	handle, err := ap.BeginAppend(ctx, staging.Key, req.Size)
	if err != nil {
		s.abortUpload(ctx, claim.ID)
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w: %v", op, claimcheck.ErrUnavailable, err)
	}
	up := meta.Upload{
		ClaimID: claim.ID, Namespace: ns, BlobID: blobID, Key: staging.Key,
		Size: req.Size, Digest: req.Digest, ContentType: req.ContentType, CreatedAt: now,
	}
	if err := s.meta.CreateResumable(ctx, up, handle); err != nil {
		// No row holds the handle: abort it here, nobody else can.
		s.dropAppended(ctx, staging.Key, handle)
		s.abortUpload(ctx, claim.ID)
		return claimcheck.ResumableUpload{}, metaErr(op, err)
	}
	s.metrics.uploadsStarted.WithLabelValues(ns).Inc()
	return resumableOf(up, 0, meta.ClaimPending, confirmBy, nil), nil
}

// resumableOf is the public state of an upload.
func resumableOf(up meta.Upload, received int64, st meta.ClaimState, due time.Time, ref *claimcheck.Ref) claimcheck.ResumableUpload {
	r := claimcheck.ResumableUpload{
		ID: up.ClaimID, Namespace: up.Namespace, State: claimcheck.ClaimState(st),
		Size: up.Size, Offset: received, Digest: up.Digest, ContentType: up.ContentType, Ref: ref,
	}
	if st == meta.ClaimPending {
		r.ExpiresAt = due
	}
	return r
}

// loadResumable loads upload id and its claim, finishing the claim
// first if it is due (the in-line sweep): a reaped or aborted upload is
// a *GoneError.
func (s *Store) loadResumable(ctx context.Context, op, id string) (meta.ResumableUpload, meta.Claim, error) {
	if !claimcheck.ValidClaimID(id) {
		return meta.ResumableUpload{}, meta.Claim{}, fmt.Errorf("%s: %w", op, invalidf("upload id %q is malformed", id))
	}
	r, err := s.meta.Resumable(ctx, id)
	if errors.Is(err, meta.ErrNotFound) {
		return meta.ResumableUpload{}, meta.Claim{}, fmt.Errorf("%s %s: %w", op, id, claimcheck.ErrNotFound)
	}
	if err != nil {
		return meta.ResumableUpload{}, meta.Claim{}, metaErr(op, err)
	}
	c, err := s.load(ctx, op, claimcheck.Ref{ID: id}, false)
	if err != nil {
		return meta.ResumableUpload{}, meta.Claim{}, err
	}
	return r, c, nil
}

// ResumableUpload returns an upload's state; see claimcheck.Uploads. A
// pending upload whose last byte is stored but whose completion failed
// (a crash, a storage error) is completed here: the client that asks
// where to continue gets the claim instead of an upload it cannot
// finish.
func (s *Store) ResumableUpload(ctx context.Context, id string) (claimcheck.ResumableUpload, error) {
	op := "resumable upload " + id
	r, c, err := s.loadResumable(ctx, op, id)
	if err != nil {
		return claimcheck.ResumableUpload{}, err
	}
	if c.State == meta.ClaimPending && r.Received == r.Size {
		return s.completeResumable(ctx, op, r, c)
	}
	return s.stateOf(ctx, op, r, c)
}

// stateOf is the state of upload r whose claim is c (pending or active).
func (s *Store) stateOf(ctx context.Context, op string, r meta.ResumableUpload, c meta.Claim) (claimcheck.ResumableUpload, error) {
	if c.State != meta.ClaimActive {
		return resumableOf(r.Upload, r.Received, c.State, c.DueAt, nil), nil
	}
	ref, err := s.confirmedRef(ctx, op, c)
	if err != nil {
		return claimcheck.ResumableUpload{}, err
	}
	return resumableOf(r.Upload, r.Size, c.State, c.DueAt, &ref), nil
}

// AppendResumable stores a chunk; see claimcheck.Uploads.
//
// The body streams through the chunk's hash (when a checksum was sent)
// and the deadline keeper of streaming puts (progress.go) into the
// storage's Append, which calls back each time bytes up to an offset are
// stored. Only then is the offset recorded, with the deadline moved to
// confirm_within from now, as a compare-and-swap on the offset recorded
// before and on the claim being pending. So an offset in the database
// always names bytes the storage holds; a chunk whose checksum does not
// match (or that broke off before its end, so it cannot be checked) is
// refused at the callback and counts as never sent; and an append that
// loses to the reaper stores nothing the reaper has not removed.
func (s *Store) AppendResumable(ctx context.Context, id string, offset int64, body io.Reader, chunk claimcheck.ChunkChecksum) (claimcheck.ResumableUpload, error) {
	ctx, sp := s.startOpOn(ctx, spanTusAppend, id)
	v, err := s.appendResumable(ctx, id, offset, body, chunk)
	tracing.End(sp, err)
	return v, err
}

// appendResumable is AppendResumable inside its span (tracing.go).
func (s *Store) appendResumable(ctx context.Context, id string, offset int64, body io.Reader, chunk claimcheck.ChunkChecksum) (claimcheck.ResumableUpload, error) {
	op := "append to upload " + id
	r, c, err := s.loadResumable(ctx, op, id)
	if err != nil {
		return claimcheck.ResumableUpload{}, err
	}
	if c.State == meta.ClaimActive {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", op, invalidf("the upload is complete; nothing more can be appended"))
	}
	if offset != r.Received {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", op, invalidf("offset %d: %d bytes are stored; continue from there", offset, r.Received))
	}
	check, err := newChunkCheck(chunk)
	if err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", op, err)
	}
	if r.Received < r.Size {
		var aerr error
		if r, c, aerr = s.appendChunk(ctx, op, r, c, body, check); aerr != nil {
			return resumableOf(r.Upload, r.Received, c.State, c.DueAt, nil), aerr
		}
		if r.Received < r.Size {
			return resumableOf(r.Upload, r.Received, c.State, c.DueAt, nil), nil
		}
	}
	return s.completeResumable(ctx, op, r, c)
}

// appendChunk appends body to upload r and returns r and c as recorded
// after it.
func (s *Store) appendChunk(ctx context.Context, op string, r meta.ResumableUpload, c meta.Claim, body io.Reader, check *chunkCheck) (meta.ResumableUpload, meta.Claim, error) {
	ap, err := s.appender(op)
	if err != nil {
		return r, c, err
	}
	pol, err := s.Policy(ctx, r.Namespace)
	if err != nil {
		return r, c, fmt.Errorf("%s: %w", op, err)
	}
	window := pol.Uploads.ConfirmWithin.D()
	if check != nil {
		check.r = body
		body = check
	}
	// The payload's sha256 runs on from the saved state while it covers
	// the bytes received, so that completion need not read them back.
	// Only where completion may keep the bytes as they are: a namespace
	// that compresses or encrypts reads them back through the codec
	// anyway, which hashes them.
	run := &runningHash{r: body}
	if !pol.Encrypted() && (pol.Compression == claimcheck.CompressionNone || pol.Compression == claimcheck.CompressionAuto) {
		run.h, run.bt = resumeHash(r)
	}
	body = run
	body = &pendingProgress{r: body, ctx: ctx, s: s, claimID: c.ID, blobID: r.BlobID,
		window: window, expires: c.ExpiresAt, last: s.clock.Now()}
	src := &readErr{r: body}
	before := r.Received
	durable := func(o int64) error {
		if check != nil {
			if err := check.verdict(); err != nil {
				return err
			}
		}
		// Recorded even if the client has gone: the bytes are stored,
		// and the next request should find them.
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		now := s.clock.Now()
		due := minTime(now.Add(window), c.ExpiresAt)
		// The hash is saved only for an offset whose bytes it saw
		// exactly: the store may record less than it read (an S3 append
		// records the end of its last whole part first).
		state := run.stateAt(o - before)
		if err := s.meta.RecordReceived(cctx, meta.Received{ID: c.ID, BlobID: r.BlobID, From: r.Received, To: o,
			HashState: state, DueAt: due, Now: now}); err != nil {
			return err
		}
		r.Received, c.DueAt = o, due
		if state != nil {
			r.HashState, r.HashedTo = state, o
		}
		return nil
	}
	_, err = ap.Append(ctx, r.Key, r.Handle, r.Size, r.Received, src, durable)
	if err == nil {
		return r, c, nil
	}
	var mismatch *chunkMismatch
	switch {
	case errors.As(err, &mismatch):
		return r, c, fmt.Errorf("%s: %w: %s; the upload stays at %d bytes", op, claimcheck.ErrChecksumMismatch, mismatch, before)
	case errors.Is(err, errChunkUnchecked):
		return r, c, fmt.Errorf("%s: %w: the chunk broke off before its end, so its checksum could not be checked; nothing of it was kept", op, claimcheck.ErrInvalidArgument)
	case errors.Is(err, blob.ErrNotFound):
		if _, lc, lerr := s.loadResumable(ctx, op, c.ID); lerr != nil {
			return r, c, lerr
		} else if lc.State == meta.ClaimPending {
			return r, c, s.lostResumable(ctx, op, r)
		}
		return r, c, fmt.Errorf("%s: %w: the upload was finished meanwhile", op, claimcheck.ErrInvalidArgument)
	case errors.Is(err, meta.ErrConflict), errors.Is(err, meta.ErrNotFound), errors.Is(err, claimcheck.ErrGone):
		// The reaper or an abort finished the upload while the chunk
		// streamed (or another request appended first): answer what
		// the upload is now. If it is finished, what this append wrote
		// (S3: the tail at the key) may have landed after the sweeper
		// collected the row's objects: remove it now rather than leave
		// debris for the backstop.
		if _, lc, lerr := s.loadResumable(ctx, op, c.ID); lerr != nil {
			if errors.Is(lerr, claimcheck.ErrGone) {
				s.dropAppended(ctx, r.Key, r.Handle)
			}
			return r, c, lerr
		} else if lc.State != meta.ClaimPending {
			return r, lc, fmt.Errorf("%s: %w: the upload is %s", op, claimcheck.ErrInvalidArgument, lc.State)
		}
		return r, c, fmt.Errorf("%s: %w: another request appended to the upload meanwhile; ask for its offset and continue from there", op, claimcheck.ErrInvalidArgument)
	case src.err != nil && errors.Is(err, src.err):
		// The body broke off: what arrived is kept (r.Received says how
		// much).
		return r, c, fmt.Errorf("%s: %w", op, bodyErr(err))
	default:
		return r, c, fmt.Errorf("%s: %w: %v", op, claimcheck.ErrUnavailable, err)
	}
}

// completeResumable turns upload r, whose bytes are all stored, into
// the claim: the storage completes the object, its size and sha256 are
// checked (against the digest declared at the start, if any), and the
// claim is committed like a confirmed upload. A namespace that
// compresses or encrypts gets the payload rewritten first, through the
// put's own writer, into a new staging blob the claim moves to
// (meta.Restage), so the new object is owned before its first byte. A
// payload that does not match its declared digest finishes the upload at
// once: nothing is stored and the reservation is refunded.
func (s *Store) completeResumable(ctx context.Context, op string, r meta.ResumableUpload, c meta.Claim) (claimcheck.ResumableUpload, error) {
	start := s.clock.Now()
	ap, err := s.appender(op)
	if err != nil {
		return claimcheck.ResumableUpload{}, err
	}
	pol, err := s.Policy(ctx, r.Namespace)
	if err != nil {
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := ap.CompleteAppend(ctx, r.Key, r.Handle, r.Size); err != nil {
		if errors.Is(err, blob.ErrNotFound) {
			// Aborted under us: say what the upload is now.
			if _, _, lerr := s.loadResumable(ctx, op, r.ClaimID); lerr != nil {
				return claimcheck.ResumableUpload{}, lerr
			}
			return claimcheck.ResumableUpload{}, s.lostResumable(ctx, op, r)
		}
		return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w: complete the stored object: %v", op, claimcheck.ErrUnavailable, err)
	}

	var sk *sealKey
	if pol.Encrypted() {
		if sk, err = s.namespaceKey(ctx, r.Namespace); err != nil {
			return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", op, err)
		}
	}
	var w written
	blobID := r.BlobID
	verified := true // the object was read back whole (or written from a whole read)
	if sk == nil && !s.wouldCompress(ctx, pol, r.Key) {
		// Stored as it arrived: its digest is the running hash's, or,
		// when that does not cover it, one read of the object.
		if w, verified, err = s.appendedAsIs(ctx, r); err != nil {
			return claimcheck.ResumableUpload{}, fmt.Errorf("%s: %w", op, err)
		}
	} else {
		if blobID, w, err = s.rewriteResumable(ctx, op, r, c, pol, sk); err != nil {
			if errors.Is(err, claimcheck.ErrChecksumMismatch) {
				return claimcheck.ResumableUpload{}, s.refuseResumable(ctx, op, r, err)
			}
			return claimcheck.ResumableUpload{}, err
		}
	}
	if w.size != r.Size {
		return claimcheck.ResumableUpload{}, s.refuseResumable(ctx, op, r, fmt.Errorf("%w: the stored payload has %d bytes, %d were declared", claimcheck.ErrChecksumMismatch, w.size, r.Size))
	}
	if r.Digest != "" && w.digest != r.Digest {
		return claimcheck.ResumableUpload{}, s.refuseResumable(ctx, op, r, fmt.Errorf("%w: the payload hashes to %s, sha256 %s was declared", claimcheck.ErrChecksumMismatch, w.digest, r.Digest))
	}

	res, err := s.commitWritten(ctx, commitParams{
		op: op, ns: r.Namespace, claim: c, blobID: blobID, w: w, pol: pol, sk: sk,
		// An object read whole that matched may repair a damaged blob of
		// the same content (integrity.go).
		verified:  verified,
		confirmed: true,
		readBack: func(ctx context.Context) error {
			// The blob of these bytes is damaged: this object may repair it
			// once read back and found right, as a put's would.
			size, digest, _, herr := s.hashStored(ctx, r.Upload)
			if herr != nil || size != w.size || digest != w.digest {
				return fmt.Errorf("%s: %w: the stored payload does not read back as it was received", op, claimcheck.ErrUnavailable)
			}
			return nil
		},
	})
	if errors.Is(err, meta.ErrConflict) {
		_, lc, lerr := s.loadResumable(ctx, op, r.ClaimID)
		if lerr != nil {
			return claimcheck.ResumableUpload{}, lerr
		}
		return s.stateOf(ctx, op, r, lc)
	}
	if err != nil {
		return claimcheck.ResumableUpload{}, err
	}
	if blobID != r.BlobID {
		// The object as it arrived is not needed any more; its orphaned
		// row is marked collected by the sweeper.
		s.dropAppended(ctx, r.Key, r.Handle)
	}
	s.metrics.uploadsConfirmed.WithLabelValues(r.Namespace).Inc()
	s.committed(ctx, r.Namespace, res, w, start)
	ref := refOf(res.Claim, res.Blob)
	return resumableOf(r.Upload, r.Size, meta.ClaimActive, c.DueAt, &ref), nil
}

// appendedAsIs describes upload r's completed object, stored as it
// arrived: size from the storage, digest from the running hash when it
// covers every byte (no read), else from reading the object whole
// (verified then).
func (s *Store) appendedAsIs(ctx context.Context, r meta.ResumableUpload) (written, bool, error) {
	// The block table (ADR 0257) runs beside the hash; a payload of more
	// than one block whose table did not run to its end is read once
	// here for it, and its sha256 with it.
	if h, bt := resumeHash(r); h != nil && r.HashedTo == r.Size && (bt != nil || r.Size <= storedform.BlockSize) {
		a, err := s.blobs.Attributes(ctx, r.Key)
		if err != nil {
			return written{}, false, fmt.Errorf("%w: stat the stored payload: %v", claimcheck.ErrUnavailable, err)
		}
		digest := digestOf(h.Sum(nil))
		w := written{key: r.Key, digest: digest, size: a.Size, stored: a.Size, compression: string(claimcheck.CompressionNone)}
		if bt != nil && a.Size == r.Size {
			w.blocks = bt.Encoded()
		}
		return w, false, nil
	}
	size, digest, blocks, err := s.hashStored(ctx, r.Upload)
	if err != nil {
		return written{}, false, err
	}
	return written{key: r.Key, digest: digest, size: size, stored: size, compression: string(claimcheck.CompressionNone), blocks: blocks}, true, nil
}

// resumeHash is the running sha256 of upload r, continued from its
// saved state, with the running block table of the payload (ADR 0257)
// when the state carries it; nil when the saved state does not cover
// the bytes received.
func resumeHash(r meta.ResumableUpload) (hash.Hash, *storedform.BlockTable) {
	if r.HashedTo != r.Received {
		return nil, nil
	}
	h, bt := sha256.New(), storedform.NewBlockTable()
	if len(r.HashState) == 0 {
		if r.Received != 0 {
			return nil, nil
		}
		return h, bt
	}
	n := min(len(r.HashState), sha256StateLen)
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(r.HashState[:n]); err != nil {
		return nil, nil
	}
	if len(r.HashState) == n || bt.UnmarshalBinary(r.HashState[n:]) != nil {
		return h, nil // a state saved without the table, or after it was dropped
	}
	return h, bt
}

// sha256StateLen is the length of a saved sha256 state, which the block
// table's state follows.
var sha256StateLen = func() int {
	b, _ := sha256.New().(encoding.BinaryMarshaler).MarshalBinary()
	return len(b)
}()

// maxCarriedBlocks bounds the block table a resumable upload saves with
// every recorded offset (4 bytes a block: 64 KiB for 1 GiB of payload).
// Past it the table is dropped, and completion reads the object once to
// compute it.
const maxCarriedBlocks = 16384

// runningHash feeds what an append reads to the payload's running
// hash and block table (nil: none), counting the bytes.
type runningHash struct {
	r  io.Reader
	h  hash.Hash
	bt *storedform.BlockTable
	n  int64
}

func (rh *runningHash) Read(p []byte) (int, error) {
	n, err := rh.r.Read(p)
	if rh.h != nil {
		rh.h.Write(p[:n])
		if rh.bt != nil {
			_, _ = rh.bt.Write(p[:n]) // never fails
		}
	}
	rh.n += int64(n)
	return n, err
}

// stateAt is the hash's saved state (and the block table's after it)
// if it has seen exactly n bytes, else nil.
func (rh *runningHash) stateAt(n int64) []byte {
	if rh.h == nil || rh.n != n {
		return nil
	}
	b, err := rh.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil
	}
	if rh.bt != nil && rh.bt.Blocks() > maxCarriedBlocks {
		rh.bt = nil
	}
	if rh.bt != nil {
		t, _ := rh.bt.MarshalBinary() // never fails
		b = append(b, t...)
	}
	return b
}

// wouldCompress reports whether the namespace's compression would
// change the object at key: never with none, always with a codec, and
// with auto what the put's choice makes of its first bytes (one range
// read). A failed read answers yes: the rewrite then reports it.
func (s *Store) wouldCompress(ctx context.Context, pol claimcheck.Policy, key string) bool {
	switch pol.Compression {
	case claimcheck.CompressionNone:
		return false
	case claimcheck.CompressionAuto:
	default:
		return true
	}
	rd, err := s.blobs.NewRangeReader(ctx, key, 0, sampleSize)
	if err != nil {
		return true
	}
	defer func() { _ = rd.Close() }() // read only
	sample, err := io.ReadAll(rd)
	if err != nil {
		return true
	}
	return compress.Choose(string(pol.Compression), sample) != compress.None
}

// rewriteResumable writes the completed object of upload r again through
// the put's writer (compression, encryption) into a new staging blob,
// and returns that blob's id and what was written. The claim moves to
// the new blob before the first byte is written; the old blob, orphaned
// by the move, keeps the object as it arrived until the claim's
// deadline, so a retry after a crash can read it again (it finds the
// claim moved already and writes the same blob's object again).
func (s *Store) rewriteResumable(ctx context.Context, op string, r meta.ResumableUpload, c meta.Claim, pol claimcheck.Policy, sk *sealKey) (string, written, error) {
	blobID, key := c.BlobID, ""
	if c.BlobID == r.BlobID {
		now := s.clock.Now()
		blobID = newBlobID(now)
		key = objectKey(r.Namespace, blobID)
		if sk != nil {
			key = encryptedObjectKey(r.Namespace, blobID, sk.ID())
		}
		err := s.meta.Restage(ctx, meta.RestageParams{
			ClaimID: c.ID, From: r.BlobID,
			To:            meta.Blob{ID: blobID, Namespace: r.Namespace, Key: key, CreatedAt: now},
			FromCollectAt: c.DueAt, Now: now,
		})
		if err != nil {
			return "", written{}, metaErr(op, err)
		}
	} else {
		b, err := s.meta.Blob(ctx, c.BlobID)
		if err != nil {
			return "", written{}, metaErr(op, err)
		}
		key = b.Key
	}
	rd, err := s.blobs.NewReader(ctx, r.Key)
	if err != nil {
		return "", written{}, fmt.Errorf("%s: %w: read the stored payload: %v", op, claimcheck.ErrUnavailable, err)
	}
	defer func() { _ = rd.Close() }() // read only
	// The reservation is the declared size: the writer refuses more.
	w, err := s.writeObject(ctx, io.LimitReader(rd, r.Size+1), writeParams{
		key:  key,
		pol:  claimcheck.Policy{Compression: pol.Compression, MaxSize: claimcheck.Size(r.Size)},
		opts: claimcheck.PutOptions{Size: r.Size, Digest: r.Digest},
		sk:   sk,
	})
	if err != nil {
		return "", written{}, fmt.Errorf("%s: %w", op, err)
	}
	return blobID, w, nil
}

// refuseResumable finishes upload r whose payload failed its check
// (reason aborted: the reservation is refunded and its rows orphaned)
// and removes what the storage holds at once, then returns cause.
func (s *Store) refuseResumable(ctx context.Context, op string, r meta.ResumableUpload, cause error) error {
	// A failure leaves the claim pending, due at its deadline: the
	// sweeper reaps it then, as any abandoned upload.
	_, _ = s.finishResumable(ctx, r)
	return fmt.Errorf("%s: %w; nothing was stored and the reservation is refunded", op, cause)
}

// lostResumable finishes pending upload r whose bytes the storage no
// longer holds: on S3, a bucket rule aborts multipart uploads some time
// after they started, whatever their progress (the safety net's rule:
// a day). Nothing can complete it; the client must start again.
func (s *Store) lostResumable(ctx context.Context, op string, r meta.ResumableUpload) error {
	// A failure leaves the claim pending, due at its deadline: the
	// sweeper reaps it then, as any abandoned upload.
	_, _ = s.finishResumable(ctx, r)
	return fmt.Errorf("%s: %w: the storage no longer holds the upload's bytes (on S3 a bucket rule aborts multipart uploads a day after they start); start the upload again", op, claimcheck.ErrInvalidArgument)
}

// finishResumable finishes upload r as aborted and removes its bytes
// now rather than at the next sweep. It reports whether the claim was
// finished by this call.
func (s *Store) finishResumable(ctx context.Context, r meta.ResumableUpload) (bool, error) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	c, err := s.meta.Claim(cctx, r.ClaimID)
	if err != nil {
		return false, metaErr("abort upload "+r.ClaimID, err)
	}
	res, done, err := s.meta.FinishClaim(cctx, r.ClaimID, meta.ReasonAborted, s.clock.Now(), false)
	if err != nil {
		return false, metaErr("abort upload "+r.ClaimID, err)
	}
	if done {
		s.sweepMetrics.ObserveFinished(res)
	}
	s.dropAppended(cctx, r.Key, r.Handle)
	if c.BlobID != r.BlobID {
		// Restaged: the rewritten object's row is orphaned too.
		if b, err := s.meta.Blob(cctx, c.BlobID); err == nil {
			s.discardObject(cctx, b.Key)
		}
	}
	return done, nil
}

// dropAppended aborts what the storage holds of an appended object. A
// failure is left to the sweeper, which aborts it again with the row.
func (s *Store) dropAppended(ctx context.Context, key, handle string) {
	ap := blob.AbilitiesOf(s.blobs).Appender
	if ap == nil {
		return
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := ap.AbortAppend(cctx, key, handle); err != nil {
		s.log.WarnContext(ctx, "resumable upload: could not remove the stored bytes now; the sweeper will", "key", key, "err", err)
	}
}

// AbortResumable finishes a pending upload now; see claimcheck.Uploads.
func (s *Store) AbortResumable(ctx context.Context, id string) error {
	ctx, sp := s.startOpOn(ctx, spanTusTerminate, id)
	err := s.abortResumable(ctx, id)
	tracing.End(sp, err)
	return err
}

// abortResumable is AbortResumable inside its span (tracing.go).
func (s *Store) abortResumable(ctx context.Context, id string) error {
	op := "abort upload " + id
	if !claimcheck.ValidClaimID(id) {
		return fmt.Errorf("%s: %w", op, invalidf("upload id %q is malformed", id))
	}
	r, err := s.meta.Resumable(ctx, id)
	if errors.Is(err, meta.ErrNotFound) {
		return fmt.Errorf("%s: %w", op, claimcheck.ErrNotFound)
	}
	if err != nil {
		return metaErr(op, err)
	}
	c, err := s.load(ctx, op, claimcheck.Ref{ID: id}, true)
	if err != nil {
		return err
	}
	switch c.State {
	case meta.ClaimDeleted:
		return nil
	case meta.ClaimActive:
		return fmt.Errorf("%s: %w", op, invalidf("the upload is complete: delete the claim instead"))
	}
	_, err = s.finishResumable(ctx, r)
	return err
}

// readErr remembers the first error of a body other than io.EOF, so
// that a failed append can tell the client's broken body from the
// storage's failure.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// chunkCheck hashes one chunk as it streams and compares the sum at its
// end.
type chunkCheck struct {
	r    io.Reader
	alg  string
	h    hash.Hash
	want []byte
	// done is set at the body's io.EOF; mismatch then, if the sums
	// differ.
	done     bool
	mismatch *chunkMismatch
}

// chunkMismatch says which sums differed.
type chunkMismatch struct {
	alg       string
	got, want []byte
}

func (m *chunkMismatch) Error() string {
	return fmt.Sprintf("the chunk's %s is %s, the checksum sent says %s", m.alg, hex.EncodeToString(m.got), hex.EncodeToString(m.want))
}

// errChunkUnchecked refuses a chunk whose body ended in an error, so
// its checksum could not be compared.
var errChunkUnchecked = errors.New("engine: chunk not checked")

func newChunkCheck(c claimcheck.ChunkChecksum) (*chunkCheck, error) {
	var h hash.Hash
	switch c.Algorithm {
	case "":
		return nil, nil
	case "sha256":
		h = sha256.New()
	case "sha1":
		h = sha1.New()
	default:
		return nil, invalidf("checksum algorithm %q: want one of %v", c.Algorithm, claimcheck.ChunkAlgorithms)
	}
	if len(c.Sum) != h.Size() {
		return nil, invalidf("%s checksum: %d bytes, want %d", c.Algorithm, len(c.Sum), h.Size())
	}
	return &chunkCheck{alg: c.Algorithm, h: h, want: c.Sum}, nil
}

func (c *chunkCheck) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	if err == io.EOF {
		c.done = true
		if got := c.h.Sum(nil); !bytes.Equal(got, c.want) {
			c.mismatch = &chunkMismatch{alg: c.alg, got: got, want: c.want}
		}
	}
	return n, err
}

// verdict is nil only for a chunk read to its end whose sum matched.
func (c *chunkCheck) verdict() error {
	switch {
	case c.mismatch != nil:
		return c.mismatch
	case !c.done:
		return errChunkUnchecked
	}
	return nil
}
