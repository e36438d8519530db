package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/integrity"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// maxCASRetries bounds how often an operation reloads a claim after
// losing a compare-and-swap to a concurrent change. Each loss means the
// claim changed state, and a claim changes state a bounded number of
// times, so a handful always suffices.
const maxCASRetries = 5

// load returns the claim named by ref after the in-line sweep: if its due
// time has passed it is finished first, so a caller never sees a claim
// that should already be gone. It answers ErrNotFound for unknown ids and
// for a namespace that does not match (ids do not leak across
// namespaces), and a *GoneError for finished claims unless allowDeleted.
func (s *Store) load(ctx context.Context, op string, ref claimcheck.Ref, allowDeleted bool) (meta.Claim, error) {
	c, _, _, err := s.loadWithBlob(ctx, op, ref, allowDeleted, false)
	return c, err
}

// loadWithBlob is load that, with withBlob, reads the claim's blob in the
// same round trip;
// ok reports whether b is that blob, as read with the claim that is
// returned.
func (s *Store) loadWithBlob(ctx context.Context, op string, ref claimcheck.Ref, allowDeleted, withBlob bool) (c meta.Claim, b meta.Blob, ok bool, err error) {
	if !claimcheck.ValidClaimID(ref.ID) {
		return meta.Claim{}, b, false, fmt.Errorf("%s: %w", op, invalidf("claim id %q is malformed", ref.ID))
	}
	// The load is the metadata round trip of every claim operation: its
	// latency is the sweeper's signal of the cost its pages put on
	// requests (sweep/pace.go). Begin also counts as an operation, like
	// touch.
	defer s.sweeper.Done(s.sweeper.Begin())
	if withBlob {
		c, b, ok, err = s.meta.ClaimWithBlob(ctx, ref.ID)
	} else {
		c, err = s.meta.Claim(ctx, ref.ID)
	}
	if errors.Is(err, meta.ErrNotFound) || (err == nil && ref.Namespace != "" && ref.Namespace != c.Namespace) {
		s.metrics.notFound.Inc()
		return meta.Claim{}, meta.Blob{}, false, fmt.Errorf("%s %s: %w", op, ref.ID, claimcheck.ErrNotFound)
	}
	if err != nil {
		return meta.Claim{}, meta.Blob{}, false, metaErr(op+" "+ref.ID, err)
	}
	c, swept, err := s.sweepLoaded(ctx, op, ref, c, allowDeleted)
	if err != nil || swept {
		// Finished in-line since it was read: the blob read with it may
		// be stale.
		b, ok = meta.Blob{}, false
	}
	if ok {
		s.traceClaim(ctx, c, &b)
	} else {
		s.traceClaim(ctx, c, nil)
	}
	return c, b, ok, err
}

// sweepLoaded finishes the loaded claim c first if it is due (the in-line
// sweep), reading it again then (swept), and answers a *GoneError for a
// finished one unless allowDeleted.
func (s *Store) sweepLoaded(ctx context.Context, op string, ref claimcheck.Ref, c meta.Claim, allowDeleted bool) (_ meta.Claim, swept bool, _ error) {
	now := s.clock.Now()
	if c.State != meta.ClaimDeleted && !c.DueAt.IsZero() && !c.DueAt.After(now) {
		swept = true
		// Due work done in-line is the sweeper's work, whoever's request
		// found it: the audit trail names the sweeper, not the caller.
		res, done, err := s.meta.FinishClaim(claimcheck.WithActor(ctx, meta.ActorSweeper), c.ID, "", now, true)
		if err != nil {
			return meta.Claim{}, swept, metaErr(op+" "+ref.ID, err)
		}
		if done {
			s.sweepMetrics.ObserveFinished(res)
		}
		if c, err = s.meta.Claim(ctx, ref.ID); err != nil {
			return meta.Claim{}, swept, metaErr(op+" "+ref.ID, err)
		}
	}
	if c.State == meta.ClaimDeleted && !allowDeleted {
		s.metrics.gone.WithLabelValues(c.DeleteReason).Inc()
		return c, swept, fmt.Errorf("%s: %w", op, goneOf(c))
	}
	return c, swept, nil
}

func goneOf(c meta.Claim) *claimcheck.GoneError {
	return &claimcheck.GoneError{ID: c.ID, Reason: claimcheck.GoneReason(c.DeleteReason), At: c.DeletedAt}
}

// Redeem opens the claim's payload: the object streams through the
// decompressor and a verifying reader, so corruption surfaces as
// ErrChecksumMismatch at the latest at the end of the stream.
func (s *Store) Redeem(ctx context.Context, ref claimcheck.Ref) (*claimcheck.Payload, error) {
	ctx, sp := s.startOp(ctx, spanRedeem, ref.Namespace)
	v, err := s.redeem(ctx, ref)
	tracing.End(sp, err)
	return v, err
}

// redeem is Redeem inside its span (tracing.go).
func (s *Store) redeem(ctx context.Context, ref claimcheck.Ref) (*claimcheck.Payload, error) {
	start := s.clock.Now()
	c, b, sk, err := s.redeemable(ctx, ref)
	if err != nil {
		return nil, err
	}
	p, err := s.openPayload(ctx, c, b, sk, start)
	if err != nil {
		return nil, err
	}
	// The read is served from here on: record it (off this path). If the
	// claim is finished concurrently, its blob stays for the grace period,
	// longer than any stream.
	s.reads.add(c.ID, c.Namespace, start, claimcheck.ActorFrom(ctx))
	s.metrics.redeemed.WithLabelValues(c.Namespace).Inc()
	return p, nil
}

// redeemable loads the claim named by ref for a redeem (whole or ranged):
// its blob, and the key of its object (nil for a plain one). It fails for
// a finished, pending or damaged claim, and waits for an unwritten
// receipt of a delete_after_read claim first.
func (s *Store) redeemable(ctx context.Context, ref claimcheck.Ref) (meta.Claim, meta.Blob, *sealKey, error) {
	// Checked before the load: if no receipt of this claim is unwritten
	// now, the row we load already reflects every earlier read.
	unsaved := s.reads.unsavedFor(ref.ID)
	c, b, loaded, err := s.loadWithBlob(ctx, "redeem", ref, false, true)
	if err != nil {
		return c, meta.Blob{}, nil, err
	}
	if unsaved && c.DeleteAfterRead {
		// An earlier read may have started the redelivery window: write
		// it, then decide again. Only delete_after_read claims wait;
		// for the others a receipt changes no decision.
		if err := s.reads.sync(ctx); err != nil {
			return c, meta.Blob{}, nil, err
		}
		if c, b, loaded, err = s.loadWithBlob(ctx, "redeem", ref, false, true); err != nil {
			return c, meta.Blob{}, nil, err
		}
	}
	if c.State == meta.ClaimPending {
		s.metrics.notFound.Inc()
		return c, meta.Blob{}, nil, fmt.Errorf("redeem %s: %w: the claim is still being written", c.ID, claimcheck.ErrNotFound)
	}
	if !loaded {
		if b, err = s.meta.Blob(ctx, c.BlobID); err != nil {
			return c, b, nil, metaErr("redeem "+c.ID, err)
		}
		s.traceBlob(ctx, b)
	}
	// Encrypted objects name their data key (crypt.go); a destroyed key
	// finishes the claim: its bytes can never be read again.
	sk, err := s.objectKeyOf(ctx, c.ID, c.Namespace, b)
	if err != nil {
		return c, b, nil, s.unreadable(ctx, c, err)
	}
	if b.Damaged() {
		// Found altered, short or missing before: nothing good to serve
		// until a put of the same bytes repairs it (integrity.go).
		s.metrics.corruption.Inc()
		return c, b, nil, damagedErr(c.ID, b)
	}
	return c, b, sk, nil
}

// objectFailed answers a redeem whose live claim's object could not be
// opened (err): under the rule of ADR 0255 (integrity.Classify) a
// missing object, or one the storage keeps answering with an error of
// its own while it answers others, is damage: the blob is marked and the
// answer is checksum_mismatch. Anything else is the storage being
// unavailable.
func (s *Store) objectFailed(ctx context.Context, c meta.Claim, b meta.Blob, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	f, cerr := integrity.Classify(ctx, s.blobs, b.Key, err)
	if cerr != nil {
		return fmt.Errorf("redeem %s: %w", c.ID, cerr)
	}
	s.log.ErrorContext(ctx, "redeem: the object of a live claim cannot be read", "claim", c.ID, "blob", b.ID, "key", b.Key, "cause", f.Cause, "detail", f.Detail)
	s.metrics.corruption.Inc()
	s.markDamaged(ctx, b, f.Cause, f.Detail+" (redeem)")
	return fmt.Errorf("redeem %s: %w: the stored object %s is %s; a put of the same bytes repairs it", c.ID, claimcheck.ErrChecksumMismatch, b.Key, f.Cause)
}

// openPayload opens the whole payload of claim c: the object streams
// through the decrypter, the decompressor and a verifying reader. It
// records no read.
func (s *Store) openPayload(ctx context.Context, c meta.Claim, b meta.Blob, sk *sealKey, start time.Time) (*claimcheck.Payload, error) {
	obj, src, stored, err := s.openStored(ctx, c, b, sk)
	if err != nil {
		return nil, err
	}
	dec, err := compress.NewReader(b.Compression, stored)
	if err != nil {
		_ = obj.Close() // a read-only object; the redeem fails with err
		if src.Err != nil {
			return nil, fmt.Errorf("redeem %s: %w: read object: %v", c.ID, claimcheck.ErrUnavailable, src.Err)
		}
		s.metrics.corruption.Inc()
		s.markDamaged(ctx, b, meta.DamageChecksum, fmt.Sprintf("cannot be decompressed on redeem: %v", err))
		return nil, fmt.Errorf("redeem %s: %w: stored object cannot be decompressed: %v", c.ID, claimcheck.ErrChecksumMismatch, err)
	}
	body := &redeemStream{s: s, ctx: ctx, blob: b, ns: c.Namespace, id: c.ID, dec: dec, src: src, obj: obj, start: start}
	p := claimcheck.NewPayload(refOf(c, b), c.ContentType, body)
	// The stored bytes decompressed fine but are not the ones put (a
	// flipped byte of an uncompressed object, a truncation at a block
	// boundary): the blob is damaged.
	p.OnMismatch(func(error) {
		// Not the error's text: it names the digests (ADR 0096).
		body.damaged(errors.New("payload does not match the recorded size and digest"))
	})
	return p, nil
}

// openStored opens the object of claim c and, for an encrypted one, the
// decrypter over it: stored reads the compressed stream. src remembers
// the object store's own read error.
func (s *Store) openStored(ctx context.Context, c meta.Claim, b meta.Blob, sk *sealKey) (obj io.ReadCloser, src *sourceReader, stored io.Reader, err error) {
	obj, err = s.blobs.NewReader(ctx, b.Key)
	if err != nil {
		return nil, nil, nil, s.objectFailed(ctx, c, b, err)
	}
	src = &sourceReader{R: obj}
	stored = src
	if sk != nil {
		if stored, err = sk.Decrypt(src, b.Key); err != nil {
			_ = obj.Close() // a read-only object; the redeem fails with err
			if src.Err != nil {
				return nil, nil, nil, fmt.Errorf("redeem %s: %w: read object: %v", c.ID, claimcheck.ErrUnavailable, src.Err)
			}
			s.metrics.corruption.Inc()
			s.markDamaged(ctx, b, meta.DamageChecksum, fmt.Sprintf("decryption fails on redeem: %v", err))
			return nil, nil, nil, fmt.Errorf("redeem %s: %w: stored object fails decryption (altered or truncated): %v", c.ID, claimcheck.ErrChecksumMismatch, err)
		}
		stored = openedReader{stored}
	}
	return obj, src, stored, nil
}

// sourceReader tells a storage read failure from damage (integrity.SourceReader).
type sourceReader = integrity.SourceReader

// redeemStream is the decompressed object. Decompression errors that did
// not come from storage mean the stored bytes are corrupt, which is
// reported as ErrChecksumMismatch; at the end it records metrics.
type redeemStream struct {
	s    *Store
	ctx  context.Context
	blob meta.Blob
	// marked: the blob was reported damaged once; a stream reports once.
	marked bool
	ns     string
	id     string
	dec    io.ReadCloser
	src    *sourceReader
	obj    io.ReadCloser
	start  time.Time
	n      int64
	done   bool
}

func (r *redeemStream) Read(p []byte) (int, error) {
	n, err := r.dec.Read(p)
	r.n += int64(n)
	if err == nil || err == io.EOF {
		return n, err
	}
	if r.src.Err != nil {
		return n, fmt.Errorf("redeem %s: %w: read object: %v", r.id, claimcheck.ErrUnavailable, r.src.Err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return n, err
	}
	err = fmt.Errorf("redeem %s: %w: stored object is corrupt: %v", r.id, claimcheck.ErrChecksumMismatch, err)
	r.damaged(err)
	return n, err
}

// damaged marks the stream's blob damaged after a verification failure of
// its stored bytes (once per stream).
func (r *redeemStream) damaged(err error) {
	if r.marked {
		return
	}
	r.marked = true
	r.s.metrics.corruption.Inc()
	r.s.markDamaged(r.ctx, r.blob, meta.DamageChecksum, "on redeem: "+err.Error())
}

func (r *redeemStream) Close() error {
	if !r.done {
		r.done = true
		r.s.metrics.bytesOut.WithLabelValues(r.ns).Add(float64(r.n))
		r.s.metrics.redeemDur.WithLabelValues(r.ns).Observe(r.s.clock.Now().Sub(r.start).Seconds())
	}
	err := r.dec.Close()
	return errors.Join(err, r.obj.Close())
}

// Stat returns the claim's state; a due claim is finished first.
func (s *Store) Stat(ctx context.Context, ref claimcheck.Ref) (claimcheck.ClaimInfo, error) {
	if err := s.reads.sync(ctx); err != nil {
		return claimcheck.ClaimInfo{}, err
	}
	c, err := s.load(ctx, "stat", ref, true)
	if err != nil {
		return claimcheck.ClaimInfo{}, err
	}
	var b meta.Blob
	// A compacted finished claim is its tombstone: no blob, and nothing
	// but its state, reason and finish time to tell (ADR 0263).
	if c.BlobID != "" {
		if b, err = s.meta.Blob(ctx, c.BlobID); err != nil {
			return claimcheck.ClaimInfo{}, metaErr("stat "+c.ID, err)
		}
	}
	info := infoOf(c, b)
	info.Holds, err = s.holdsOf(ctx, c)
	return info, err
}

func infoOf(c meta.Claim, b meta.Blob) claimcheck.ClaimInfo {
	info := claimcheck.ClaimInfo{
		Ref: refOf(c, b), State: claimcheck.ClaimState(c.State), ContentType: c.ContentType, Labels: c.Labels,
		Reads: c.Reads, FirstReadAt: c.FirstReadAt, Releases: len(c.ReleasedBy), Consumers: c.Consumers,
		ReleasedBy: c.ReleasedBy, DeleteAt: c.DueAt, DeletedAt: c.DeletedAt, DeleteReason: claimcheck.GoneReason(c.DeleteReason),
	}
	// The object is the payload as it is only when neither compressed nor
	// sealed (an encrypted object's key names its data key), and only an
	// object in the bucket is one an operator can fetch.
	if _, sealed := dataKeyOfObject(b.Key); b.Key != "" && !sealed && !isInlineKey(b.Key) && b.Compression == string(claimcheck.CompressionNone) {
		info.Object = b.Key
	}
	return info
}

// Release records consumer's ack.
func (s *Store) Release(ctx context.Context, ref claimcheck.Ref, consumer string) error {
	ctx, sp := s.startOp(ctx, spanRelease, ref.Namespace)
	if sp.IsRecording() {
		sp.SetAttributes(tracing.Consumer.String(consumer))
	}
	err := s.release(ctx, ref, consumer)
	tracing.End(sp, err)
	return err
}

// release is Release inside its span (tracing.go).
func (s *Store) release(ctx context.Context, ref claimcheck.Ref, consumer string) error {
	if len(consumer) > maxConsumerName {
		return fmt.Errorf("release: %w", putFieldErr("consumer", "", fmt.Sprintf("longer than %d characters", maxConsumerName)))
	}
	if err := checkText("consumer", consumer); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if err := s.reads.sync(ctx); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		c, err := s.load(ctx, "release", ref, true)
		if err != nil {
			return err
		}
		if c.State == meta.ClaimDeleted {
			// A repeated ack of a claim that its releases finished is
			// still idempotent; anything else is too late.
			if c.DeleteReason == meta.ReasonReleased && slices.Contains(c.ReleasedBy, consumer) {
				return nil
			}
			s.metrics.gone.WithLabelValues(c.DeleteReason).Inc()
			return fmt.Errorf("release: %w", goneOf(c))
		}
		if c.State == meta.ClaimPending {
			return fmt.Errorf("release %s: %w: the claim is still being written", c.ID, claimcheck.ErrNotFound)
		}
		if len(c.ConsumerNames) > 0 && !slices.Contains(c.ConsumerNames, consumer) {
			return fmt.Errorf("release %s: %w", c.ID, invalidf("consumer %q is not one of the claim's consumers %v", consumer, c.ConsumerNames))
		}
		_, err = s.meta.Release(ctx, c.ID, consumer, s.clock.Now())
		if err == nil {
			return nil
		}
		if errors.Is(err, meta.ErrConflict) && s.refuseHeld(ctx, "release", c) != nil {
			// Past its deadline but kept by a legal hold: there is no
			// deadline left to lower, and it finishes when the hold is
			// lifted. The ack is accepted.
			return nil
		}
		if !errors.Is(err, meta.ErrConflict) || attempt == maxCASRetries {
			return metaErr("release "+c.ID, err)
		}
	}
}

// Delete finishes the claim now.
func (s *Store) Delete(ctx context.Context, ref claimcheck.Ref) error {
	ctx, sp := s.startOp(ctx, spanDelete, ref.Namespace)
	err := s.deleteClaim(ctx, ref)
	tracing.End(sp, err)
	return err
}

// deleteClaim is Delete inside its span (tracing.go).
func (s *Store) deleteClaim(ctx context.Context, ref claimcheck.Ref) error {
	if err := s.reads.sync(ctx); err != nil {
		return err
	}
	c, err := s.load(ctx, "delete", ref, true)
	if err != nil {
		return err
	}
	if c.State == meta.ClaimDeleted {
		return nil
	}
	if err := s.refuseHeld(ctx, "delete", c); err != nil {
		return err
	}
	res, done, err := s.meta.FinishClaim(ctx, c.ID, meta.ReasonDeleted, s.clock.Now(), false)
	if err != nil {
		return metaErr("delete "+c.ID, err)
	}
	if done {
		s.sweepMetrics.ObserveFinished(res)
	} else if c.State == meta.ClaimActive {
		// Not finished: a hold set meanwhile won the row (holds.go).
		return s.refuseHeld(ctx, "delete", c)
	}
	return nil
}
