package sweep

import (
	"context"
	"time"
)

// SetSleep replaces the wait between pages.
func (s *Sweeper) SetSleep(f func(context.Context, time.Duration) error) { s.sleep = f }

// Observe reports a request latency as the engine's Done would.
func (s *Sweeper) Observe(d time.Duration, overlapped bool) { s.observe(d, overlapped) }
