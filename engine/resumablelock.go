package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/claimcheck/claimcheck"
)

// A resumable upload's lock (ADR 0185) is a lease in the metadata store
// named after the upload, so it excludes the requests of every replica
// over the same database. The holder renews it and watches it for
// release requests, which a waiter records on the lease; a holder that
// dies stops renewing, and its lease expires.

const (
	// uploadLockTTL is how long a lease lasts unless renewed: how long
	// an upload stays locked after its holder died. Shorter than the 20
	// seconds a tus request waits for a lock (tusd's default), so that a
	// client resuming after a replica crashed gets through on its first
	// request.
	uploadLockTTL = 15 * time.Second
	// uploadLockRenew is how often the holder renews: a third of the
	// lease, so two renewals can fail (a slow database) before it ends.
	uploadLockRenew = 5 * time.Second
	// uploadLockCheck is how often the holder looks for release
	// requests (a read): a client that resumes while its old request
	// still hangs on another replica waits about this long.
	uploadLockCheck = time.Second
	// uploadLockPoll is how often a waiter tries to take the lease.
	uploadLockPoll = 250 * time.Millisecond
)

// uploadLockName is the lease of upload id.
func uploadLockName(id string) string { return "upload:" + id }

// LockResumable takes upload id's lock; see server.Store.
func (s *Store) LockResumable(ctx context.Context, id string, release func()) (func() error, error) {
	name := uploadLockName(id)
	holder := newID("lock_", s.clock.Now()) // one per request: two requests on one replica are two holders
	poll := time.NewTicker(uploadLockPoll)
	defer poll.Stop()
	for {
		ok, err := s.meta.TryLease(ctx, name, holder, s.clock.Now(), uploadLockTTL)
		if err == nil && !ok {
			err = s.meta.RequestLeaseRelease(ctx, name, holder)
		}
		if ctx.Err() != nil {
			// The lease may have been taken as ctx ended: give it up
			// (a release by a non-holder changes nothing).
			_ = s.releaseUploadLock(ctx, name, holder)
			return nil, fmt.Errorf("lock upload %s: %w", id, ctx.Err())
		}
		if err != nil {
			return nil, fmt.Errorf("lock upload %s: %w: %v", id, claimcheck.ErrUnavailable, err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock upload %s: %w", id, ctx.Err())
		case <-poll.C:
		}
	}

	// The holder outlives ctx, which only bounds the wait.
	hold, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go s.holdUploadLock(hold, name, holder, release, done)
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			stop()
			<-done
			err = s.releaseUploadLock(ctx, name, holder)
		})
		return err
	}, nil
}

// releaseUploadLock gives the lease up, also when ctx has ended.
func (s *Store) releaseUploadLock(ctx context.Context, name, holder string) error {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := s.meta.ReleaseLease(cctx, name, holder); err != nil {
		return fmt.Errorf("unlock %s: %w: %v", name, claimcheck.ErrUnavailable, err)
	}
	return nil
}

// holdUploadLock runs while a lock is held, until ctx ends (unlock): it
// renews the lease and calls release once when a waiter asked for the
// lock, or when the lease was lost or could not be renewed. It goes on
// renewing after that, because the holder's request may still be
// writing until it unlocks.
func (s *Store) holdUploadLock(ctx context.Context, name, holder string, release func(), done chan<- struct{}) {
	defer close(done)
	released := false
	letGo := func() {
		if !released {
			released = true
			release()
		}
	}
	tick := time.NewTicker(uploadLockCheck)
	defer tick.Stop()
	lastRenewal := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(lastRenewal) >= uploadLockRenew {
			ok, err := s.meta.TryLease(ctx, name, holder, s.clock.Now(), uploadLockTTL)
			if ctx.Err() != nil {
				return
			}
			if err != nil || !ok {
				if !released {
					s.log.WarnContext(ctx, "a resumable upload's lock could not be renewed; its request is asked to end", "lease", name, "held", ok, "error", err)
				}
				letGo()
			} else {
				lastRenewal = time.Now()
			}
		}
		held, asked, err := s.meta.CheckLease(ctx, name, holder, s.clock.Now())
		if ctx.Err() != nil {
			return
		}
		if err == nil && (!held || asked) {
			letGo()
		}
	}
}
