package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// sampleSize is how much of a payload "auto" compression looks at.
const sampleSize = 64 << 10

// copyBufferSize is the chunk of the engine's other hashing copies
// (verifying a written object, a direct upload): large enough that a
// megabyte costs a handful of system calls, small enough that many
// concurrent ones stay cheap. A put streams through claimcheck.HashCopy.
const copyBufferSize = 256 << 10

// Limits on put options; the HTTP layer enforces header sizes too.
const (
	maxLabels       = 32
	maxLabelKeyLen  = 63
	maxLabelValLen  = 256
	maxConsumers    = 1000
	maxConsumerName = 128
)

// Put stores the payload read from body in namespace ns.
//
// The protocol (docs/ARCHITECTURE.md, "Put"): (1) one transaction reserves quota and
// inserts a staging blob and a pending claim whose due time is the upload
// deadline, so the object about to be written is owned by a row before its
// first byte exists; (2) the body streams through sha256, a byte count and
// the compressor into the object; (3) one transaction commits: dedup onto
// an existing blob or staging → committed, pending → active, reservation →
// usage. A failure after (1) finishes the claim as aborted, which releases
// the reservation and orphans the staging blob for the sweeper; a crash
// leaves the same rows due, so nothing is ever stranded.
func (s *Store) Put(ctx context.Context, ns string, body io.Reader, opts claimcheck.PutOptions) (claimcheck.Ref, error) {
	return s.put(ctx, ns, body, opts, nil)
}

// PutWithPolicy is Put that also answers the effective policy of ns the
// put was stored under (zero when it failed), so that the HTTP server
// can tell the client how to put there next (Claimcheck-Digest-First,
// ADR 0155) without asking the store a second time.
func (s *Store) PutWithPolicy(ctx context.Context, ns string, body io.Reader, opts claimcheck.PutOptions) (claimcheck.Ref, claimcheck.Policy, error) {
	var pol claimcheck.Policy
	ref, err := s.put(ctx, ns, body, opts, &pol)
	if err != nil {
		return ref, claimcheck.Policy{}, err
	}
	return ref, pol, nil
}

// put is Put; when polOut is set, it receives the namespace's policy.
func (s *Store) put(ctx context.Context, ns string, body io.Reader, opts claimcheck.PutOptions, polOut *claimcheck.Policy) (ref claimcheck.Ref, err error) {
	ctx, span := s.startOp(ctx, spanPut, ns)
	defer func() { endPut(span, ref, err) }()
	start := s.clock.Now()
	s.touch()
	pol, err := s.Policy(ctx, ns)
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("put: %w", err)
	}
	if polOut != nil {
		*polOut = pol
	}
	consumers, err := checkPutOptions(&opts, pol)
	if err != nil {
		s.metrics.putErrors.WithLabelValues(errorKind(err)).Inc()
		return claimcheck.Ref{}, fmt.Errorf("put to %s: %w", ns, err)
	}
	// Encryption at rest (crypt.go): the namespace's data key, created on
	// first use; nil for a plain namespace.
	var sk *sealKey
	if pol.Encrypted() {
		if sk, err = s.namespaceKey(ctx, ns); err != nil {
			s.metrics.putErrors.WithLabelValues(errorKind(err)).Inc()
			return claimcheck.Ref{}, fmt.Errorf("put to %s: %w", ns, err)
		}
	}

	now := s.clock.Now()
	expires := now.Add(pol.TTL.MaxAge.D())
	uploadDeadline := minTime(now.Add(pol.Uploads.ConfirmWithin.D()), expires)
	claim := meta.Claim{
		ID: newClaimID(now), Namespace: ns, State: meta.ClaimPending,
		Size: opts.Size, ReservedBytes: opts.Size,
		ContentType: opts.ContentType, Labels: opts.Labels,
		CreatedAt: now, ExpiresAt: expires,
		DueAt: uploadDeadline, DueReason: meta.ReasonAborted,
		DeleteAfterRead:    pol.DeletesAfterRead(),
		RetentionAfterRead: pol.TTL.RetentionAfterRead.D(),
		GracePeriod:        pol.TTL.GracePeriod.D(),
		Consumers:          consumers, ConsumerNames: opts.ConsumerNames,
		TraceParent: s.traceParentOf(span),
	}
	s.traceLabels(span, ns, opts.Labels)
	blobID := newBlobID(now)
	claim.BlobID = blobID
	staging := meta.Blob{
		ID: blobID, Namespace: ns, Key: objectKey(ns, blobID), State: meta.BlobStaging,
		CreatedAt: now, StateAt: now, CollectAt: uploadDeadline,
	}
	if sk != nil {
		staging.Key = encryptedObjectKey(ns, blobID, sk.ID())
	}
	// The object's writer opens while the rows are written (ADR 0155):
	// the file backend creates its temp file, about as long as the
	// transaction; S3 sends nothing before the first part. No byte is
	// written before the rows own the key, and nothing is visible at the
	// key before Close; a crash in between leaves at most an empty temp
	// file, debris the backstop collects like that of a killed write.
	askFirst := digestFirst(pol, opts)
	if span.IsRecording() {
		span.SetAttributes(tracing.DigestFirst.Bool(askFirst), tracing.Encrypted.Bool(sk != nil))
	}
	if askFirst && s.checkInTx {
		// Local objects and SQLite: the whole question is one transaction
		// (ADR 0140), asked before anything is opened or written.
		if ref, done, err := s.putDigestFirstInTx(ctx, ns, pol, opts, claim, start, sk); done {
			markDedupHit(span, err)
			return ref, err // a dedup hit: the body is never read
		}
		askFirst = false
	}
	obj := s.openObject(ctx, staging.Key)
	pending := meta.CreatePendingParams{
		Claim: claim, Blob: staging, Now: now,
		QuotaBytes: int64(pol.Quota.Bytes), QuotaClaims: pol.Quota.Claims,
		Tenant: s.tenantQuota(pol),
	}
	if askFirst {
		// The digest-first check rides with the creation (ADR 0145): a
		// candidate to share creates nothing and comes back.
		pending.UnlessDigest = opts.Digest
	}
	err = s.meta.CreatePending(ctx, pending)
	if ce, ok := errors.AsType[*meta.CandidateError](err); ok {
		if ref, done, err := s.putDigestFirstOn(ctx, ns, pol, opts, claim, start, sk, ce.Blob); done {
			obj.discard()
			markDedupHit(span, err)
			return ref, err // a dedup hit: the body is never read
		}
		pending.UnlessDigest = "" // not shared: upload
		err = s.meta.CreatePending(ctx, pending)
	}
	if err != nil {
		obj.discard()
		s.metrics.putErrors.WithLabelValues("quota_or_metadata").Inc()
		return claimcheck.Ref{}, metaErr("put to "+ns, err)
	}

	// From here on the claim exists: any failure must finish it.
	defer func() {
		if err == nil {
			return
		}
		s.metrics.putErrors.WithLabelValues(errorKind(err)).Inc()
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if _, _, ferr := s.meta.FinishClaim(cctx, claim.ID, meta.ReasonAborted, s.clock.Now(), false); ferr != nil {
			// The claim stays pending with its due time; the sweeper
			// finishes it then.
			s.log.Warn("put: could not finish aborted claim; the sweeper will", "claim", claim.ID, "err", ferr)
		}
	}()

	// The deadline follows the body's progress (progress.go).
	body = &pendingProgress{r: body, ctx: ctx, s: s, claimID: claim.ID, blobID: blobID,
		window: pol.Uploads.ConfirmWithin.D(), expires: expires, last: now}
	w, err := s.writeOpenedObject(ctx, obj, staging.Key, body, pol, opts, sk)
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("put to %s: %w", ns, err)
	}
	if h := s.hooks.afterObjectWrite; h != nil {
		if err := h(ctx); err != nil {
			return claimcheck.Ref{}, err
		}
	}

	now = s.clock.Now()
	cp := meta.CommitParams{
		ClaimID: claim.ID, BlobID: blobID,
		Digest: w.digest, Size: w.size, StoredSize: w.stored, Compression: w.compression,
		Now: now, DueAt: expires, DueReason: meta.ReasonExpired,
		Dedup: pol.DedupEnabled(), QuotaBytes: int64(pol.Quota.Bytes),
		Tenant: s.tenantQuota(pol),
		// Lifecycle safety net: never share an object the bucket may
		// expire before this claim's deadline (lifecyclebound.go).
		// Encrypted namespaces share only objects written under the
		// current data key (keyFloor, crypt.go).
		DedupNotBefore: keyFloor(s.dedupNotBefore(ns, latestExpiry(pol, claim.CreatedAt, expires)), sk),
		DiscardRetry:   s.discardRetry,
	}
	if err := s.saveBlocks(ctx, w); err != nil {
		return claimcheck.Ref{}, fmt.Errorf("put to %s: %w", ns, err)
	}
	res, err := s.commitShared(ctx, cp, func(ctx context.Context) error {
		return s.verifyWritten(ctx, ns, staging.Key, w, sk)
	})
	if errors.Is(err, meta.ErrConflict) {
		s.metrics.casConflicts.Inc()
		s.discardObject(ctx, staging.Key)
		return claimcheck.Ref{}, fmt.Errorf("put to %s: %w", ns, &claimcheck.GoneError{ID: claim.ID, Reason: claimcheck.ReasonNeverConfirmed, At: now})
	}
	if err != nil {
		return claimcheck.Ref{}, metaErr("put to "+ns, err)
	}
	s.metrics.created.WithLabelValues(ns).Inc()
	s.metrics.bytesIn.WithLabelValues(ns).Add(float64(w.size))
	s.metrics.stored.WithLabelValues(ns).Add(float64(w.stored))
	s.observeDedup(ns, res, w.size)
	if span.IsRecording() {
		span.SetAttributes(tracing.DedupHit.Bool(res.DedupHit))
	}
	if res.Repaired {
		s.sweepMetrics.GC.Repaired.Inc()
		s.log.Info("integrity: a put repaired a damaged blob", "blob", res.Blob.ID, "namespace", ns, "claim", claim.ID, "key", res.Blob.Key)
	}
	s.collectDiscarded(ctx, res)
	s.metrics.putDur.WithLabelValues(ns).Observe(s.clock.Now().Sub(start).Seconds())
	return refOf(res.Claim, res.Blob), nil
}

// endPut ends a put's span: what was stored, or why not.
func endPut(span trace.Span, ref claimcheck.Ref, err error) {
	if err == nil && span.IsRecording() {
		span.SetAttributes(tracing.ClaimID.String(ref.ID), tracing.Size.Int64(ref.Size),
			tracing.StoredSize.Int64(ref.StoredSize), tracing.Compression.String(ref.Compression))
	}
	tracing.End(span, err)
}

// markDedupHit marks a put answered by the digest-first check.
func markDedupHit(span trace.Span, err error) {
	if err == nil && span.IsRecording() {
		span.SetAttributes(tracing.DedupHit.Bool(true))
	}
}

// checkPutOptions validates opts against the policy and returns the
// number of releases that finish the claim. The engine is the one
// validator of put options: every refusal of a field is a
// *claimcheck.FieldError naming the field as the HTTP API's upload body
// spells it ("labels", "consumer_names"), which the HTTP server maps to
// the header the client wrote.
func checkPutOptions(opts *claimcheck.PutOptions, pol claimcheck.Policy) (int, error) {
	if err := checkPutText(opts); err != nil {
		return 0, err
	}
	if opts.Size < 0 {
		return 0, putFieldErr("size", strconv.FormatInt(opts.Size, 10), "must not be negative")
	}
	if opts.Size > int64(pol.MaxSize) {
		return 0, fmt.Errorf("%w: payload of %d bytes exceeds max_size %s (%d bytes)", claimcheck.ErrTooLarge, opts.Size, pol.MaxSize, int64(pol.MaxSize))
	}
	if opts.Digest != "" && !claimcheck.ValidDigest(opts.Digest) {
		return 0, putFieldErr("digest", quoteShort(opts.Digest), "want sha256:<64 lowercase hex digits>")
	}
	if len(opts.ContentType) > 255 {
		return 0, putFieldErr("content_type", "", "longer than 255 characters")
	}
	if len(opts.Labels) > maxLabels {
		return 0, putFieldErr("labels", "", fmt.Sprintf("%d labels, at most %d", len(opts.Labels), maxLabels))
	}
	for k, v := range opts.Labels {
		if k == "" || len(k) > maxLabelKeyLen {
			return 0, putFieldErr("labels", quoteShort(k), fmt.Sprintf("a key has 1 to %d characters", maxLabelKeyLen))
		}
		if len(v) > maxLabelValLen {
			return 0, putFieldErr("labels", quoteShort(k), fmt.Sprintf("value longer than %d characters", maxLabelValLen))
		}
	}
	n := opts.Consumers
	if len(opts.ConsumerNames) > 0 {
		if n != 0 && n != len(opts.ConsumerNames) {
			return 0, putFieldErr("consumers", strconv.Itoa(n), fmt.Sprintf("does not match the %d consumer names given", len(opts.ConsumerNames)))
		}
		seen := map[string]bool{}
		for _, name := range opts.ConsumerNames {
			if name == "" || len(name) > maxConsumerName {
				return 0, putFieldErr("consumer_names", quoteShort(name), fmt.Sprintf("a name has 1 to %d characters", maxConsumerName))
			}
			if seen[name] {
				return 0, putFieldErr("consumer_names", quoteShort(name), "given twice")
			}
			seen[name] = true
		}
		n = len(opts.ConsumerNames)
	}
	if n < 0 || n > maxConsumers {
		return 0, putFieldErr("consumers", strconv.Itoa(n), fmt.Sprintf("want 0 to %d", maxConsumers))
	}
	if n == 0 {
		n = 1
	}
	return n, nil
}

// written describes an object that was written completely.
type written struct {
	key         string // the object's key
	digest      string
	size        int64 // original bytes
	stored      int64 // object bytes
	compression string
	// blocks is the block table of a plain object of more than one
	// block (storedform.BlockTable, ADR 0257), nil otherwise; saveBlocks
	// records it before the commit.
	blocks []byte
}

// saveBlocks records the block table of the object w describes, if it
// has one, before the commit that makes it redeemable (ADR 0257): a
// plain object committed since block tables has its table.
func (s *Store) saveBlocks(ctx context.Context, w written) error {
	if w.blocks == nil {
		return nil
	}
	if err := s.meta.SaveBlockTable(ctx, w.key, w.blocks); err != nil {
		return fmt.Errorf("%w: %v", claimcheck.ErrUnavailable, err)
	}
	return nil
}

// blockHash is the payload's sha256 that also feeds the block table of
// the object, for an object that may be stored plain.
type blockHash struct {
	hash.Hash
	t *storedform.BlockTable
}

func (b blockHash) Write(p []byte) (int, error) {
	_, _ = b.t.Write(p) // never fails
	return b.Hash.Write(p)
}

// writeObject streams body into the object at key: sha256 and a byte
// count over the original bytes, then the compressor, then the object
// writer. It never buffers more than a sample and a copy buffer. The
// object becomes visible only if every check passes: on any error the
// write's context is cancelled before Close, which discards it.
func (s *Store) writeObject(ctx context.Context, key string, body io.Reader, pol claimcheck.Policy, opts claimcheck.PutOptions) (written, error) {
	return s.writeObjectSealed(ctx, key, body, pol, opts, nil)
}

// writeObjectSealed is writeObject that, with sk, encrypts the compressed
// stream under the data key sk (crypt.go) before it reaches the object.
func (s *Store) writeObjectSealed(ctx context.Context, key string, body io.Reader, pol claimcheck.Policy, opts claimcheck.PutOptions, sk *sealKey) (written, error) {
	return s.writeOpenedObject(ctx, s.openObject(ctx, key), key, body, pol, opts, sk)
}

// openingObject is an object writer being opened in the background
// (openObject). Its context is the write's: cancelled before Close, the
// write is discarded.
type openingObject struct {
	cancel context.CancelFunc
	done   chan struct{}
	w      io.WriteCloser
	err    error
}

// openObject starts opening a writer for the object at key.
func (s *Store) openObject(ctx context.Context, key string) *openingObject {
	wctx, cancel := context.WithCancel(ctx)
	o := &openingObject{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.w, o.err = s.blobs.NewWriter(wctx, key)
	}()
	return o
}

// wait returns the opened writer.
func (o *openingObject) wait() (io.WriteCloser, error) {
	<-o.done
	return o.w, o.err
}

// discard abandons the object: nothing was written, nothing stays.
func (o *openingObject) discard() {
	o.cancel()
	if w, err := o.wait(); err == nil {
		_ = w.Close() // discards: its context is cancelled
	}
}

// writeOpenedObject is writeObjectSealed into the writer opening in o,
// which it closes or discards.
func (s *Store) writeOpenedObject(ctx context.Context, o *openingObject, key string, body io.Reader, pol claimcheck.Policy, opts claimcheck.PutOptions, sk *sealKey) (written, error) {
	obj, err := o.wait()
	if err != nil {
		o.cancel()
		return written{}, fmt.Errorf("%w: write object: %v", claimcheck.ErrUnavailable, err)
	}
	committed := false
	defer func() {
		if !committed {
			o.cancel()
			_ = obj.Close() // discards the object: its context is cancelled
		}
	}()
	// Only "auto" looks at the payload before choosing; any other
	// setting streams from the first byte.
	var sample []byte
	if string(pol.Compression) == compress.Auto {
		sample = make([]byte, sampleSize)
		n, err := io.ReadFull(body, sample)
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			body = bytes.NewReader(nil)
		case err != nil:
			return written{}, bodyErr(err)
		}
		sample = sample[:n]
	}
	alg := compress.Choose(string(pol.Compression), sample)

	objCount := &countingWriter{w: obj}
	var (
		sink io.Writer = objCount
		enc  io.WriteCloser
	)
	if sk != nil {
		if enc, err = sk.Encrypt(objCount, key); err != nil {
			return written{}, fmt.Errorf("%w: encrypt: %v", claimcheck.ErrUnavailable, err)
		}
		sink = sealWriter{enc}
	}
	// A payload stored as it arrives, whose size and sha256 the caller
	// declared, is announced to the object writer with them: S3 then
	// receives the bytes while they arrive instead of after the last
	// one, and checks them against the declared sha256 (ADR 0165). The
	// body is still checked against both below before Close, which
	// alone completes the object.
	announced := false
	announce := func() {
		kw, ok := obj.(blob.KnownPayloadWriter)
		if !ok || sk != nil || opts.Size <= 0 || opts.Digest == "" {
			return
		}
		if sum, err := hex.DecodeString(strings.TrimPrefix(opts.Digest, "sha256:")); err == nil {
			announced = kw.SetKnownPayload(opts.Size, sum)
		}
	}
	var zw io.WriteCloser
	if alg == compress.Zstd {
		// zstd where it saves bytes: a first frame that does not shrink
		// stores the payload as it is, and alg says so before the first
		// byte is written (ADR 0165).
		zw = compress.NewZstdOrNone(sink, func(chosen string) {
			if alg = chosen; alg == compress.None {
				announce()
			}
		})
	} else if zw, err = compress.NewWriter(alg, sink); err != nil {
		return written{}, err
	} else if alg == compress.None {
		announce()
	}
	var (
		h      hash.Hash = sha256.New()
		blocks *storedform.BlockTable
	)
	if sk == nil && (alg == compress.None || alg == compress.Zstd) {
		// It may be stored as it is: its ranged reads check the blocks.
		blocks = storedform.NewBlockTable()
		h = blockHash{h, blocks}
	}
	limit := int64(pol.MaxSize)
	src := io.LimitReader(io.MultiReader(bytes.NewReader(sample), body), limit+1)
	if announced {
		// A body longer than declared fails as the caller's error, as
		// below, not as the announced object's refusal of the extra
		// bytes.
		tooLong := invalidf("the body has more than the %d bytes declared", opts.Size)
		if opts.Size >= limit {
			tooLong = fmt.Errorf("%w: payload exceeds max_size %s (%d bytes)", claimcheck.ErrTooLarge, pol.MaxSize, limit)
		}
		src = &declaredSize{r: src, left: opts.Size, tooLong: &bodyTooLong{tooLong}}
	}
	// The sha256 runs in a second goroutine beside the compressor and
	// the object write (ADR 0155): a put costs about the longer of the
	// two, not their sum. Copy has joined that goroutine when it returns,
	// and h then covers exactly the size bytes the object was given.
	size, err := claimcheck.HashCopy(zw, src, h)
	if err != nil {
		_ = zw.Close() // the put fails; what it wrote is discarded with the object
		if ctx.Err() != nil {
			return written{}, ctx.Err()
		}
		var we *writeError
		if errors.As(err, &we) {
			return written{}, fmt.Errorf("%w: write object: %v", claimcheck.ErrUnavailable, we.err)
		}
		return written{}, bodyErr(err)
	}
	if size > limit {
		_ = zw.Close() // the put fails; what it wrote is discarded with the object
		return written{}, fmt.Errorf("%w: payload exceeds max_size %s (%d bytes)", claimcheck.ErrTooLarge, pol.MaxSize, limit)
	}
	if opts.Size > 0 && size != opts.Size {
		_ = zw.Close() // the put fails; what it wrote is discarded with the object
		return written{}, invalidf("body has %d bytes, but %d were declared", size, opts.Size)
	}
	sum := h.Sum(nil)
	digest := "sha256:" + hex.EncodeToString(sum)
	if opts.Digest != "" && digest != opts.Digest {
		_ = zw.Close() // the put fails; what it wrote is discarded with the object
		return written{}, fmt.Errorf("%w: body hashes to %s, declared %s", claimcheck.ErrChecksumMismatch, digest, opts.Digest)
	}
	if err := zw.Close(); err != nil {
		return written{}, fmt.Errorf("%w: compress: %v", claimcheck.ErrUnavailable, err)
	}
	if enc != nil {
		// Writes the last segment, the one whose flag marks the end.
		if err := enc.Close(); err != nil {
			return written{}, fmt.Errorf("%w: encrypt: %v", claimcheck.ErrUnavailable, err)
		}
	}
	if ph, ok := obj.(blob.PayloadHasher); ok && alg == compress.None && sk == nil && !announced {
		// Stored as written: the payload's sha256 is the object's, and
		// S3 over plain HTTP need not hash the bytes once more.
		ph.SetPayloadSHA256(sum)
	}
	committed = true
	defer o.cancel() // after Close: the write's context ends with it
	if err := obj.Close(); err != nil {
		return written{}, fmt.Errorf("%w: write object: %v", claimcheck.ErrUnavailable, err)
	}
	w := written{key: key, digest: digest, size: size, stored: objCount.n, compression: alg}
	if blocks != nil && alg == compress.None {
		w.blocks = blocks.Encoded()
	}
	return w, nil
}

// bodyErr marks a failure to read the caller's body (a client that
// disconnected or sent fewer bytes than it announced).
func bodyErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// The put's own claim was reaped while the body stalled
	// (pendingProgress): gone, as the commit would have answered.
	if _, ok := errors.AsType[*claimcheck.GoneError](err); ok {
		return err
	}
	if tl, ok := errors.AsType[*bodyTooLong](err); ok {
		return tl.err
	}
	return invalidf("reading the payload failed: %v", err)
}

// countingWriter counts bytes and tags write failures, so a failing object
// write is not mistaken for a failing body read.
type countingWriter struct {
	w io.Writer
	n int64
}

type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		return n, &writeError{err}
	}
	return n, nil
}

// declaredSize reads the declared size bytes of a body and fails if the
// body has more.
type declaredSize struct {
	r       io.Reader
	left    int64
	tooLong error
}

// bodyTooLong is declaredSize's error, passed on by bodyErr as it is.
type bodyTooLong struct{ err error }

func (e *bodyTooLong) Error() string { return e.err.Error() }
func (e *bodyTooLong) Unwrap() error { return e.err }

func (d *declaredSize) Read(p []byte) (int, error) {
	if d.left <= 0 {
		var one [1]byte
		for {
			n, err := d.r.Read(one[:])
			if n > 0 {
				return 0, d.tooLong
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.r.Read(p)
	d.left -= int64(n)
	return n, err
}

// readerOnly hides WriterTo/ReaderFrom so io.CopyBuffer uses our buffer.
type readerOnly struct{ io.Reader }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// refOf builds the reference of a committed claim from its rows.
func refOf(c meta.Claim, b meta.Blob) claimcheck.Ref {
	return claimcheck.Ref{
		ID: c.ID, Namespace: c.Namespace, Size: c.Size,
		StoredSize: b.StoredSize, Compression: b.Compression, Digest: b.Digest,
		CreatedAt: c.CreatedAt.UTC().Truncate(time.Second), ExpiresAt: c.ExpiresAt.UTC().Truncate(time.Second),
	}
}

// errorKind is a short metric label for an error.
func errorKind(err error) string {
	for _, k := range []struct {
		err  error
		kind string
	}{
		{claimcheck.ErrTooLarge, "too_large"}, {claimcheck.ErrQuotaExceeded, "quota_exceeded"},
		{claimcheck.ErrChecksumMismatch, "checksum_mismatch"}, {claimcheck.ErrInvalidArgument, "invalid_argument"},
		{claimcheck.ErrNotFound, "not_found"}, {claimcheck.ErrGone, "gone"}, {claimcheck.ErrUnavailable, "unavailable"},
		{context.Canceled, "canceled"}, {context.DeadlineExceeded, "deadline"},
	} {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return "internal"
}
