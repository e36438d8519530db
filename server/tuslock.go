package server

import (
	"context"
	"errors"

	"github.com/tus/tusd/v2/pkg/handler"
	"github.com/tus/tusd/v2/pkg/memorylocker"
)

// tusLocker is tusd's lock on an upload over the store's shared lock
// (Store.LockResumable, ADR 0185): first tusd's in-process lock,
// which orders the requests of one replica in memory and hands over at
// once, then the store's shared lock, which excludes the requests of
// every other replica. Both pass tusd's release callback on, so a new
// request makes the one holding the upload end, on this replica or
// another.
type tusLocker struct {
	local  *memorylocker.MemoryLocker
	shared Store
}

// newTusLocker returns the lock for tusd over store's shared lock.
func newTusLocker(store Store) handler.Locker {
	return tusLocker{local: memorylocker.New(), shared: store}
}

func (l tusLocker) NewLock(id string) (handler.Lock, error) {
	local, err := l.local.NewLock(id)
	if err != nil {
		return nil, err
	}
	return &tusLock{id: id, local: local, shared: l.shared}, nil
}

// tusLock is one request's lock on one upload.
type tusLock struct {
	id     string
	local  handler.Lock
	shared Store
	unlock func() error // the shared lock's, once held
}

// Lock takes the in-process lock, then the shared one, within ctx (the
// time tusd waits for a lock). A wait that runs out is answered 423
// Locked (tusd's ErrFileLocked), which tus clients retry after asking
// for the offset, rather than tusd's ErrLockTimeout, a 500: the upload is
// busy, nothing failed.
func (l *tusLock) Lock(ctx context.Context, requestRelease func()) error {
	if err := l.local.Lock(ctx, requestRelease); err != nil {
		return lockWaitRanOut(err)
	}
	unlock, err := l.shared.LockResumable(ctx, l.id, requestRelease)
	if err != nil {
		_ = l.local.Unlock()
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return handler.ErrFileLocked
		}
		return err
	}
	l.unlock = unlock
	return nil
}

// lockWaitRanOut is the in-process lock's error as Lock answers it.
func lockWaitRanOut(err error) error {
	if errors.Is(err, handler.ErrLockTimeout) {
		return handler.ErrFileLocked
	}
	return err
}

// Unlock gives the shared lock up first, so that the next request of
// this replica, which gets the in-process lock next, finds it free.
func (l *tusLock) Unlock() error {
	var err error
	if l.unlock != nil {
		err = l.unlock()
		l.unlock = nil
	}
	return errors.Join(err, l.local.Unlock())
}
