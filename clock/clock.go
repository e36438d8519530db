// Package clock is the time source of the store and its sweepers.
//
// Engine and sweeper code never calls time.Now: it asks a Clock, and every
// time comparison in SQL takes the clock's reading as a parameter. Tests
// pass a *Fake and move time with Advance instead of sleeping. Waits go
// through the clock too (Sleep, Until): on a *Fake they end when the test
// moves the fake past their end, never by real time passing.
//
// The package has no dependencies outside the standard library, so that
// the light client may use it.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock tells the current time.
type Clock interface {
	Now() time.Time
}

// Timer is a Clock that can also wait on its own time. Real and *Fake
// are Timers; Sleep and Until wait in real time on a Clock that is not.
type Timer interface {
	Clock
	// At returns a channel that is closed once the clock reads t or
	// later, and a function that releases the wait early (a caller that
	// gives up calls it; calling it again does nothing).
	At(t time.Time) (<-chan struct{}, func())
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// At waits on a real-time timer.
func (Real) At(t time.Time) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	tm := time.AfterFunc(time.Until(t), func() { close(ch) })
	return ch, func() { tm.Stop() }
}

// Sleep waits d on clk, or until ctx ends: it returns nil when the wait
// is over and ctx's error when ctx ended first (also when d <= 0 and ctx
// has ended already). A nil clk, or one that is not a Timer, waits in
// real time.
func Sleep(ctx context.Context, clk Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if clk == nil {
		clk = Real{}
	}
	return Until(ctx, clk, clk.Now().Add(d))
}

// Until waits until clk reads t or later, or until ctx ends, like Sleep.
// A deadline is absolute: a Fake moved past t while the caller was
// getting ready to wait ends the wait at once.
func Until(ctx context.Context, clk Clock, t time.Time) error {
	if clk == nil {
		clk = Real{}
	}
	if !clk.Now().Before(t) {
		return ctx.Err()
	}
	tm, ok := clk.(Timer)
	if !ok {
		tm = Real{}
	}
	ch, stop := tm.At(t)
	defer stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
		return nil
	}
}

// Fake is a clock that only moves when told to. It is safe for concurrent
// use. Its waits (At, and so Sleep and Until) end when Advance or Set
// moves it to their end or past it.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters map[*waiter]struct{}
}

type waiter struct {
	at time.Time
	ch chan struct{}
}

// NewFake returns a fake clock that reads t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake clock's current reading.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// At returns a channel closed once the fake reads t or later.
func (f *Fake) At(t time.Time) (<-chan struct{}, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &waiter{at: t, ch: make(chan struct{})}
	if !f.now.Before(t) {
		close(w.ch)
		return w.ch, func() {}
	}
	if f.waiters == nil {
		f.waiters = map[*waiter]struct{}{}
	}
	f.waiters[w] = struct{}{}
	return w.ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.waiters, w)
	}
}

// Waiting reports how many waits on the fake have not ended: a test
// moves the fake once the goroutine it drives is waiting, not before.
func (f *Fake) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// Advance moves the clock forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// Set moves the clock to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(t)
}

// setLocked moves the clock and ends the waits that are over. f.mu held.
func (f *Fake) setLocked(t time.Time) {
	f.now = t
	for w := range f.waiters {
		if !t.Before(w.at) {
			close(w.ch)
			delete(f.waiters, w)
		}
	}
}
