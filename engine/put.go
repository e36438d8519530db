package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/claimcheck/claimcheck"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// Put stores the payload read from body in namespace ns.
//
// The protocol (docs/ARCHITECTURE.md, "Put") is the write pipeline
// (write.go) run in one call: (1) one transaction reserves quota and
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

// putting is one put in progress: what its steps share.
type putting struct {
	ns    string
	pol   claimcheck.Policy
	opts  claimcheck.PutOptions // checked by checkPutOptions
	sk    *sealKey              // the namespace's data key; nil for a plain namespace
	span  trace.Span
	start time.Time
	rows  meta.CreatePendingParams // step 1's pending claim and staging blob
	// size is the body's size when known before its bytes: declared, or
	// the length of an in-memory reader. It decides an inline object
	// (inline.go) and nothing else; only a declared size is checked.
	size int64
}

// put is Put; when polOut is set, it receives the namespace's policy.
func (s *Store) put(ctx context.Context, ns string, body io.Reader, opts claimcheck.PutOptions, polOut *claimcheck.Policy) (ref claimcheck.Ref, err error) {
	ctx, span := s.startOp(ctx, spanPut, ns)
	defer func() { endPut(span, ref, err) }()
	p := &putting{ns: ns, opts: opts, span: span, start: s.clock.Now(), size: opts.Size}
	if l, ok := body.(interface{ Len() int }); ok && p.size == 0 {
		p.size = int64(l.Len()) // a bytes.Reader, bytes.Buffer or strings.Reader
	}
	s.touch()
	if err := s.preparePut(ctx, p, polOut); err != nil {
		return claimcheck.Ref{}, err
	}
	obj, ref, done, err := s.stagePut(ctx, p)
	if done {
		return ref, err // a dedup hit (the body is never read), or no claim
	}
	// From here on the claim exists: any failure must finish it.
	defer func() {
		if err != nil {
			s.abortPut(ctx, p.rows.Claim.ID, err)
		}
	}()
	return s.writePut(ctx, p, obj, body)
}

// preparePut reads the namespace's policy, checks the put's options
// against it, takes the namespace's data key when it encrypts at rest,
// and builds step 1's rows. Nothing is written yet.
func (s *Store) preparePut(ctx context.Context, p *putting, polOut *claimcheck.Policy) error {
	pol, err := s.Policy(ctx, p.ns)
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if polOut != nil {
		*polOut = pol
	}
	p.pol = pol
	consumers, err := checkPutOptions(&p.opts, pol)
	if err != nil {
		s.metrics.putErrors.WithLabelValues(errorKind(err)).Inc()
		return fmt.Errorf("put to %s: %w", p.ns, err)
	}
	// Encryption at rest (crypt.go): the namespace's data key, created on
	// first use; nil for a plain namespace.
	if pol.Encrypted() {
		if p.sk, err = s.namespaceKey(ctx, p.ns); err != nil {
			s.metrics.putErrors.WithLabelValues(errorKind(err)).Inc()
			return fmt.Errorf("put to %s: %w", p.ns, err)
		}
	}
	p.rows = s.stage(ctx, stageParams{ns: p.ns, pol: pol, opts: p.opts, consumers: consumers,
		now: s.clock.Now(), dueReason: meta.ReasonAborted, sk: p.sk, inline: putsInline(pol, p.size)})
	return nil
}

// stagePut is step 1 of a put, with the digest-first question
// (dedup.go) when the put asks it. It returns the object's writer being
// opened, or done with the put's answer: a digest-first hit, or the
// refusal of the rows (quota, metadata), after which no claim exists.
//
// The object's writer opens while the rows are written (ADR 0155): the
// file backend creates its temp file, about as long as the transaction;
// S3 sends nothing before the first part. No byte is written before the
// rows own the key, and nothing is visible at the key before Close; a
// crash in between leaves at most an empty temp file, debris the
// backstop collects like that of a killed write.
func (s *Store) stagePut(ctx context.Context, p *putting) (obj *openingObject, ref claimcheck.Ref, done bool, err error) {
	askFirst := digestFirst(p.pol, p.opts)
	if p.span.IsRecording() {
		p.span.SetAttributes(tracing.DigestFirst.Bool(askFirst), tracing.Encrypted.Bool(p.sk != nil))
	}
	claim := p.rows.Claim
	if askFirst && s.checkInTx {
		// Local objects and SQLite: the whole question is one transaction
		// (ADR 0140), asked before anything is opened or written.
		if ref, done, err := s.putDigestFirstInTx(ctx, p.ns, p.pol, p.opts, claim, p.start, p.sk); done {
			markDedupHit(p.span, err)
			return nil, ref, true, err // a dedup hit: the body is never read
		}
		askFirst = false
	}
	obj = s.openObject(ctx, p.rows.Blob.Key)
	pending := p.rows
	if askFirst {
		// The digest-first check rides with the creation (ADR 0145): a
		// candidate to share creates nothing and comes back.
		pending.UnlessDigest = p.opts.Digest
	}
	err = s.meta.CreatePending(ctx, pending)
	if ce, ok := errors.AsType[*meta.CandidateError](err); ok {
		if ref, done, err := s.putDigestFirstOn(ctx, p.ns, p.pol, p.opts, claim, p.start, p.sk, ce.Blob); done {
			obj.discard()
			markDedupHit(p.span, err)
			return nil, ref, true, err // a dedup hit: the body is never read
		}
		pending.UnlessDigest = "" // not shared: upload
		err = s.meta.CreatePending(ctx, pending)
	}
	if err != nil {
		obj.discard()
		s.metrics.putErrors.WithLabelValues("quota_or_metadata").Inc()
		return nil, claimcheck.Ref{}, true, metaErr("put to "+p.ns, err)
	}
	return obj, claimcheck.Ref{}, false, nil
}

// writePut runs the rest of the pipeline once the rows own the object:
// the write into obj (step 2), the commit (step 4) and what follows it
// (step 5).
func (s *Store) writePut(ctx context.Context, p *putting, obj *openingObject, body io.Reader) (claimcheck.Ref, error) {
	claim, staging := p.rows.Claim, p.rows.Blob
	// The deadline follows the body's progress (progress.go).
	body = &pendingProgress{r: body, ctx: ctx, s: s, claimID: claim.ID, blobID: staging.ID,
		window: p.pol.Uploads.ConfirmWithin.D(), expires: claim.ExpiresAt, last: p.rows.Now}
	w, err := s.writeOpenedObject(ctx, obj, body, writeParams{key: staging.Key, pol: p.pol, opts: p.opts, sk: p.sk})
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("put to %s: %w", p.ns, err)
	}
	if h := s.hooks.afterObjectWrite; h != nil {
		if err := h(ctx); err != nil {
			return claimcheck.Ref{}, err
		}
	}
	res, err := s.commitWritten(ctx, commitParams{
		op: "put to " + p.ns, ns: p.ns, claim: claim, blobID: staging.ID, w: w, pol: p.pol, sk: p.sk,
		readBack: func(ctx context.Context) error {
			return s.verifyWritten(ctx, p.ns, staging.Key, w, p.sk)
		},
	})
	if errors.Is(err, meta.ErrConflict) {
		// The reaper finished the claim while the body streamed.
		s.discardObject(ctx, staging.Key)
		return claimcheck.Ref{}, fmt.Errorf("put to %s: %w", p.ns, &claimcheck.GoneError{ID: claim.ID, Reason: claimcheck.ReasonNeverConfirmed, At: s.clock.Now()})
	}
	if err != nil {
		return claimcheck.Ref{}, err
	}
	if p.span.IsRecording() {
		p.span.SetAttributes(tracing.DedupHit.Bool(res.DedupHit))
	}
	if res.Repaired {
		s.sweepMetrics.GC.Repaired.Inc()
		s.log.InfoContext(ctx, "integrity: a put repaired a damaged blob", "blob", res.Blob.ID, "namespace", p.ns, "claim", claim.ID, "key", res.Blob.Key)
	}
	s.committed(ctx, p.ns, res, w, p.start)
	return refOf(res.Claim, res.Blob), nil
}

// abortPut finishes the claim of a put that failed after step 1, which
// refunds its reservation and orphans its staging blob for the sweeper.
func (s *Store) abortPut(ctx context.Context, claimID string, err error) {
	s.metrics.putErrors.WithLabelValues(errorKind(err)).Inc()
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if _, _, ferr := s.meta.FinishClaim(cctx, claimID, meta.ReasonAborted, s.clock.Now(), false); ferr != nil {
		// The claim stays pending with its due time; the sweeper
		// finishes it then.
		s.log.WarnContext(ctx, "put: could not finish aborted claim; the sweeper will", "claim", claimID, "err", ferr)
	}
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
