package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// pendingProgress keeps a streaming put's pending claim alive while its
// body arrives (ADR 0081's companion: the put's deadline follows its
// progress). The claim is created with due time now + confirm_within;
// without this, a put still streaming at that time was reaped mid-body
// and answered gone (never_confirmed) after it had sent everything. Each
// time bytes arrive and half of confirm_within has passed since the last
// extension, the due time (and the staging blob's collect time) moves to
// now + confirm_within, never past the claim's max_age. So the invariant
// "every pending claim is due within confirm_within of its last sign of
// life" holds, and a put that stops sending is still reaped on time,
// whatever its connection does.
type pendingProgress struct {
	r       io.Reader
	ctx     context.Context
	s       *Store
	claimID string
	blobID  string
	window  time.Duration // confirm_within
	expires time.Time     // created + max_age: never extended past it
	last    time.Time     // of the last extension (creation at first)
}

func (p *pendingProgress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n == 0 {
		return n, err
	}
	now := p.s.clock.Now()
	if now.Sub(p.last) < p.window/2 {
		return n, err
	}
	due := minTime(now.Add(p.window), p.expires)
	xerr := p.s.meta.ExtendPending(p.ctx, p.claimID, p.blobID, due)
	switch {
	case xerr == nil:
		p.last = now
	case errors.Is(xerr, meta.ErrConflict), errors.Is(xerr, meta.ErrNotFound):
		// Reaped meanwhile (a stall longer than confirm_within before
		// these bytes): stop reading, the put fails as the commit would.
		return n, fmt.Errorf("put %s: %w", p.claimID, &claimcheck.GoneError{ID: p.claimID, Reason: claimcheck.ReasonNeverConfirmed, At: now})
	default:
		// A database hiccup: the deadline stays where it is and the next
		// bytes try again.
		p.s.log.WarnContext(p.ctx, "put: could not extend the deadline of a streaming put; retrying with its next bytes", "claim", p.claimID, "err", xerr)
	}
	return n, err
}
