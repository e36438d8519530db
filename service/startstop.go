package service

import (
	"context"
	"sync"
)

// StartStop runs one goroutine of a service between Start and Stop. Embed
// it, or keep one in a field; the zero value is ready.
type StartStop struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

// Start runs run in a goroutine of its own and returns at once. run's
// context is ctx's values without its cancellation: only Stop ends it, so
// a service outlives the request or command that started it. Start
// reports whether it started run: a second Start, or a Start after Stop,
// does nothing.
func (s *StartStop) Start(ctx context.Context, run func(ctx context.Context)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil || s.stopped {
		return false
	}
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		run(ctx)
	}(s.done)
	return true
}

// Stop cancels run's context and waits until run has returned. It is
// idempotent and safe to call from several goroutines (each waits); it
// reports whether a started run was stopped by this call or an earlier
// one. After Stop, Start does nothing.
func (s *StartStop) Stop() bool {
	s.mu.Lock()
	s.stopped = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel()
	<-done
	return true
}
