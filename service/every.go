package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck/clock"
)

// Config is the schedule of a service's loop. Zero fields take the
// defaults, except Name and Interval, which a service must give. A run
// logs its own failures: the loop goes on after them.
type Config struct {
	// Name names the service in errors and log lines.
	Name string
	// Interval is the time from one run's start to the next one's.
	Interval time.Duration
	// RunAtStart: the first run starts at once; otherwise one Interval
	// after the loop starts.
	RunAtStart bool
	// Clock is what the waits between runs are on (default clock.Real).
	// A service whose tests move a fake clock while its loop runs in the
	// background keeps the real one here and reads the fake for its
	// decisions, so that moving the fake does not wake the loop.
	Clock clock.Clock
}

// WithDefaults returns c with zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return c
}

// Validate reports a config a loop cannot run with.
func (c Config) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("service: a loop needs a name")
	case c.Interval <= 0:
		return fmt.Errorf("service %s: interval %s: must be positive", c.Name, c.Interval)
	}
	return nil
}

// Every calls run every c.Interval (see Config) until ctx ends, then
// returns ctx's error. Runs never overlap. The schedule is fixed, as a
// time.Ticker's: a run that outlasts its interval is followed by the
// next one at once, and the one after that is back on the schedule. It
// panics on a config that does not validate (a programming error).
func Every(ctx context.Context, c Config, run func(ctx context.Context)) error {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		panic(err)
	}
	next := c.Clock.Now()
	if !c.RunAtStart {
		next = next.Add(c.Interval)
	}
	for {
		if err := clock.Until(ctx, c.Clock, next); err != nil {
			return err
		}
		run(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		next = next.Add(c.Interval)
		if now := c.Clock.Now(); !now.Before(next) {
			// Late: the next run at once, on the last point of the
			// schedule that has passed, so the one after it is back
			// on the schedule.
			next = next.Add(now.Sub(next) / c.Interval * c.Interval)
		}
	}
}
