package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// RedeemRange opens part of the claim's payload (ADR 0110). How a part
// is read, and what it is checked against, depends on how the object is
// stored:
//
//   - uncompressed and plain, with a block table (every such object of
//     more than 64 KiB written since ADR 0257): the whole 64 KiB blocks
//     the range touches, each checked against its CRC32C before any of
//     its bytes are returned (storedform.BlockRange);
//   - uncompressed and plain, of at most one block: the whole object,
//     verified against its size and sha256 like a full redeem;
//   - uncompressed and plain, of more than one block and written before
//     block tables: the backend's range read of exactly those bytes;
//     nothing is checked beyond their count (the sha256 covers the whole
//     payload);
//   - uncompressed and encrypted: the header and the 64 KiB segments the
//     range touches; every segment is authenticated before any of its
//     bytes are returned (storedform.DecryptRange);
//   - zstd with a seek table (every zstd object written since ADR 0112),
//     encrypted or not: the table, then only the frames the range
//     touches (64 KiB of payload each since ADR 0150; larger in objects
//     written before), each decoded whole so its content checksum is
//     checked (storedform.FramedRange);
//   - compressed without a table (gzip; zstd written before frames): the
//     whole object is decrypted and decompressed from the start, the
//     bytes before the range discarded, and after the range the rest is
//     read too, so the part ends (io.EOF) only once the whole payload
//     matched its size and sha256, as a full redeem does, at its cost.
//
// Only a part that reaches the payload's last byte counts as a read: it
// is the one that completes a download, so a consumer fetching a payload
// in parts (or resuming a cut download) does not start a
// delete_after_read window with its first part (ADR 0111).
func (s *Store) RedeemRange(ctx context.Context, ref claimcheck.Ref, offset, length int64) (*claimcheck.Part, error) {
	ctx, sp := s.startOp(ctx, spanRedeem, ref.Namespace)
	if sp.IsRecording() {
		sp.SetAttributes(tracing.Range.String(rangeOf(offset, length)))
	}
	v, err := s.redeemRange(ctx, ref, offset, length)
	tracing.End(sp, err)
	return v, err
}

// redeemRange is RedeemRange inside its span (tracing.go).
func (s *Store) redeemRange(ctx context.Context, ref claimcheck.Ref, offset, length int64) (*claimcheck.Part, error) {
	start := s.clock.Now()
	c, b, sk, err := s.redeemable(ctx, ref)
	if err != nil {
		return nil, err
	}
	off, n, err := claimcheck.ResolveRange(c.ID, offset, length, b.Size)
	if err != nil {
		return nil, fmt.Errorf("redeem: %w", err)
	}
	var body io.ReadCloser
	obj := storedform.Object{Key: b.Key, Stored: b.StoredSize, Size: b.Size}
	if b.Compression == compress.Zstd {
		framed, err := storedform.FramedRange(ctx, s.blobs, obj, sk, off, n)
		if bad, ok := errors.AsType[*storedform.SeekTableError](err); ok {
			// The payload may still be fine: the whole read checks it.
			s.log.WarnContext(ctx, "ranged redeem: the seek table of a zstd object does not add up; reading it from the start", "blob", b.ID, "err", bad.Err)
		}
		switch {
		case err == nil:
			s.countRead(ctx, c, b, off, n, start)
			return claimcheck.NewPart(refOf(c, b), c.ContentType, off, n, &rangeStream{s: s, ctx: ctx, c: c, b: b, r: framed, want: n}), nil
		case !errors.Is(err, storedform.ErrNoSeekTable):
			return nil, s.rangeOpenErr(ctx, c, b, err)
		}
	}
	whole := b.Compression != compress.None
	var table []byte
	if !whole && sk == nil {
		// A plain object: its block table, if it has one.
		if b.Size <= storedform.BlockSize {
			whole = true
		} else if table, _, err = s.meta.BlockTable(ctx, b.Key); err != nil {
			return nil, metaErr("redeem "+c.ID, err)
		}
	}
	if table != nil {
		blocks, err := storedform.BlockRange(ctx, s.blobs, obj, table, off, n)
		switch {
		case err == nil:
			s.countRead(ctx, c, b, off, n, start)
			return claimcheck.NewPart(refOf(c, b), c.ContentType, off, n, &rangeStream{s: s, ctx: ctx, c: c, b: b, r: blocks, want: n}), nil
		case errors.Is(err, storedform.ErrNoBlockTable):
			// Not trusted: the payload may still be fine, and the whole
			// read checks it.
			s.log.WarnContext(ctx, "ranged redeem: the block table of a plain object does not add up; reading it whole", "blob", b.ID, "err", err)
			whole = true
		default:
			return nil, s.rangeOpenErr(ctx, c, b, err)
		}
	}
	switch {
	case whole:
		p, err := s.openPayload(ctx, c, b, sk, start)
		if err != nil {
			return nil, err
		}
		s.countRead(ctx, c, b, off, n, start)
		return claimcheck.PartOfPayload(p, off, n), nil
	case sk != nil:
		body, err = storedform.DecryptRange(ctx, s.blobs, sk, obj, off, n)
		if err != nil {
			return nil, s.rangeOpenErr(ctx, c, b, err)
		}
		body = &rangeStream{s: s, ctx: ctx, c: c, b: b, r: body, want: n}
	default:
		obj, err := s.blobs.NewRangeReader(ctx, b.Key, off, n)
		if err != nil {
			return nil, s.rangeOpenErr(ctx, c, b, err)
		}
		body = &rangeStream{s: s, ctx: ctx, c: c, b: b, r: obj, want: n}
	}
	s.countRead(ctx, c, b, off, n, start)
	return claimcheck.NewPart(refOf(c, b), c.ContentType, off, n, body), nil
}

// countRead records the read of a part that reaches the payload's end.
func (s *Store) countRead(ctx context.Context, c meta.Claim, b meta.Blob, off, n int64, start time.Time) {
	if off+n == b.Size {
		s.reads.add(c.ID, c.Namespace, start, claimcheck.ActorFrom(ctx))
		s.metrics.redeemed.WithLabelValues(c.Namespace).Inc()
	}
}

// rangeOpenErr classifies a failure to open a range of blob b's object.
func (s *Store) rangeOpenErr(ctx context.Context, c meta.Claim, b meta.Blob, err error) error {
	switch {
	case blob.FaultOf(err) == blob.FaultMissing || blob.FaultOf(err) == blob.FaultObject:
		return s.objectFailed(ctx, c, b, err)
	case errors.Is(err, storedform.ErrSegment) || errors.Is(err, compress.ErrCorrupt):
		s.metrics.corruption.Inc()
		s.markDamaged(ctx, b, meta.DamageChecksum, fmt.Sprintf("decryption fails on a ranged redeem: %v", err))
		return fmt.Errorf("redeem %s: %w: stored object fails decryption (altered or truncated): %v", c.ID, claimcheck.ErrChecksumMismatch, err)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return fmt.Errorf("redeem %s: %w: %v", c.ID, claimcheck.ErrUnavailable, err)
	}
}

// rangeStream is a range read from storage (plain, block-checked,
// decrypted or framed zstd) of want bytes. A segment failing
// authentication, a frame or a block failing its checksum, or an object
// ending before the range does (it is shorter than the recorded size)
// marks the blob damaged.
type rangeStream struct {
	s      *Store
	ctx    context.Context
	c      meta.Claim
	b      meta.Blob
	r      io.ReadCloser
	want   int64
	n      int64
	marked bool
}

func (r *rangeStream) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		if r.n >= r.want {
			return n, err
		}
		r.damaged(meta.DamageSize, fmt.Sprintf("on a ranged redeem: the object ends %d bytes into a range of %d", r.n, r.want))
		return n, fmt.Errorf("redeem %s: %w: the stored object is shorter than recorded", r.c.ID, claimcheck.ErrChecksumMismatch)
	}
	if errors.Is(err, storedform.ErrSegment) || errors.Is(err, compress.ErrCorrupt) || errors.Is(err, storedform.ErrBlock) {
		r.damaged(meta.DamageChecksum, "on a ranged redeem: "+err.Error())
		return n, fmt.Errorf("redeem %s: %w: stored object fails verification: %v", r.c.ID, claimcheck.ErrChecksumMismatch, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return n, err
	}
	return n, fmt.Errorf("redeem %s: %w: read object: %v", r.c.ID, claimcheck.ErrUnavailable, err)
}

// damaged marks the blob damaged (once per stream).
func (r *rangeStream) damaged(cause, detail string) {
	if r.marked {
		return
	}
	r.marked = true
	r.s.metrics.corruption.Inc()
	r.s.markDamaged(r.ctx, r.b, cause, detail)
}

func (r *rangeStream) Close() error {
	r.s.metrics.bytesOut.WithLabelValues(r.c.Namespace).Add(float64(r.n))
	return r.r.Close()
}
