package engine

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/compress"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
)

// RedeemEncoded opens the claim's payload as its stored zstd frames when
// it is stored so and encoding is zstd, else as Redeem does (ADR 0136).
// The frames are decrypted for an encrypted namespace (every segment is
// authenticated), their byte count is checked against the recorded
// stored size and their seek table against the sizes, so a missing,
// truncated or extended object, or an altered table, is found and marked
// damaged here as on any redeem. An altered byte inside a frame of a plain
// object is found by the reader: the frame's checksum and the payload's
// sha256 fail when it decodes, and the scrub marks the blob.
//
// A payload stored uncompressed is given as stored to a reader that
// takes a stored form (encoding zstd or identity, ADR 0155): decrypted
// for an encrypted namespace, its byte count checked against the stored
// size here, its sha256 left to the reader, which verifies it anyway.
func (s *Store) RedeemEncoded(ctx context.Context, ref claimcheck.Ref, encoding string) (*claimcheck.Encoded, error) {
	ctx, sp := s.startOp(ctx, spanRedeem, ref.Namespace)
	v, err := s.redeemEncoded(ctx, ref, encoding)
	tracing.End(sp, err)
	return v, err
}

// redeemEncoded is RedeemEncoded inside its span (tracing.go).
func (s *Store) redeemEncoded(ctx context.Context, ref claimcheck.Ref, encoding string) (*claimcheck.Encoded, error) {
	start := s.clock.Now()
	c, b, sk, err := s.redeemable(ctx, ref)
	if err != nil {
		return nil, err
	}
	var e *claimcheck.Encoded
	stored := encoding == claimcheck.EncodingZstd || encoding == claimcheck.EncodingIdentity
	switch {
	case encoding == claimcheck.EncodingZstd && b.Compression == compress.Zstd:
		e, err = s.openEncoded(ctx, c, b, sk, start)
	case stored && b.Compression == compress.None:
		e, err = s.openAsStored(ctx, c, b, sk, start)
	default:
		var p *claimcheck.Payload
		if p, err = s.openPayload(ctx, c, b, sk, start); err == nil {
			e = &claimcheck.Encoded{ReadCloser: p, Ref: p.Ref, ContentType: p.ContentType}
		}
	}
	if err != nil {
		return nil, err
	}
	// Served from here on, as in Redeem.
	s.reads.add(c.ID, c.Namespace, start, claimcheck.ActorFrom(ctx))
	s.metrics.redeemed.WithLabelValues(c.Namespace).Inc()
	return e, nil
}

// openEncoded opens the stored zstd frames of claim c.
func (s *Store) openEncoded(ctx context.Context, c meta.Claim, b meta.Blob, sk *sealKey, start time.Time) (*claimcheck.Encoded, error) {
	obj, src, stored, err := s.openStored(ctx, c, b, sk)
	if err != nil {
		return nil, err
	}
	// The reader decodes the frames and checks them and the payload; what
	// a decoder skips, the seek table, is checked here, as a decoding
	// redeem does.
	checked := compress.CheckSeekTable(&storedSize{r: stored, src: src, want: b.StoredSize}, b.Size)
	body := &redeemStream{s: s, ctx: ctx, blob: b, ns: c.Namespace, id: c.ID, dec: io.NopCloser(checked), src: src, obj: obj, start: start}
	return &claimcheck.Encoded{ReadCloser: body, Ref: refOf(c, b), ContentType: c.ContentType, Encoding: claimcheck.EncodingZstd}, nil
}

// openAsStored opens the object of claim c, stored uncompressed, as the
// payload's bytes without hashing them: the one pass that is the
// reader's. The count is checked, so a missing, short or long object is
// found and marked damaged here; an altered byte is found by the reader's
// sha256 (and by the scrub, which marks the blob), as in openEncoded.
func (s *Store) openAsStored(ctx context.Context, c meta.Claim, b meta.Blob, sk *sealKey, start time.Time) (*claimcheck.Encoded, error) {
	obj, src, stored, err := s.openStored(ctx, c, b, sk)
	if err != nil {
		return nil, err
	}
	body := &redeemStream{s: s, ctx: ctx, blob: b, ns: c.Namespace, id: c.ID, dec: io.NopCloser(&storedSize{r: stored, src: src, want: b.StoredSize}), src: src, obj: obj, start: start}
	return &claimcheck.Encoded{ReadCloser: body, Ref: refOf(c, b), ContentType: c.ContentType, Encoding: claimcheck.EncodingIdentity}, nil
}

// storedSize ends a stored stream with an error when the object did not
// have the recorded number of bytes. redeemStream reports that as a
// corrupt object (ErrChecksumMismatch) and marks the blob damaged.
type storedSize struct {
	r    io.Reader
	src  *sourceReader
	want int64
}

func (s *storedSize) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	switch {
	case s.src.N > s.want:
		return n, fmt.Errorf("the object has more than the %d bytes recorded", s.want)
	case err == io.EOF && s.src.N < s.want:
		return n, fmt.Errorf("the object ended after %d of the %d bytes recorded", s.src.N, s.want)
	}
	return n, err
}
