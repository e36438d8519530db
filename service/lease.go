package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/claimcheck/claimcheck/clock"
)

// Leaser is what a Lease needs of the metadata store (meta.Store has it):
// TryLease takes or renews the named lease for holder until now+ttl and
// reports false, without an error, when another holder has it;
// ReleaseLease gives it up if holder has it.
type Leaser interface {
	TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// LeaseConfig names a lease and says how long it lasts.
type LeaseConfig struct {
	// Name is the lease's name in the metadata store.
	Name string
	// Holder names this process (meta.LeaseHolder).
	Holder string
	// TTL is how long the lease lasts unless renewed: how long a holder
	// that died keeps the others out.
	TTL time.Duration
	// RenewAfter is how much of the clock passes before Keep renews a
	// lease it holds (0: at every Keep).
	RenewAfter time.Duration
	// Clock is the reading the lease is taken at (default clock.Real).
	Clock clock.Clock
	// Logger gets a line when a release fails (default slog.Default).
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to the defaults.
func (c LeaseConfig) WithDefaults() LeaseConfig {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports a lease that cannot be held.
func (c LeaseConfig) Validate() error {
	switch {
	case c.Name == "" || c.Holder == "":
		return fmt.Errorf("service: lease %q of holder %q: both need a name", c.Name, c.Holder)
	case c.TTL <= 0:
		return fmt.Errorf("service: lease %s: TTL %s: must be positive", c.Name, c.TTL)
	case c.RenewAfter < 0:
		return fmt.Errorf("service: lease %s: RenewAfter %s: must not be negative", c.Name, c.RenewAfter)
	}
	return nil
}

// Lease is one named lease as one holder sees it. It is safe for
// concurrent use.
type Lease struct {
	store Leaser
	cfg   LeaseConfig

	mu      sync.Mutex
	held    bool      // Keep: held since the last Keep
	renewed time.Time // Keep: when it last tried
}

// NewLease returns the lease cfg names in store. It panics on a config
// that does not validate (a programming error).
func NewLease(store Leaser, cfg LeaseConfig) *Lease {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Lease{store: store, cfg: cfg}
}

// Name is the lease's name.
func (l *Lease) Name() string { return l.cfg.Name }

// Take takes or renews the lease until the clock's now plus TTL and
// reports whether this holder has it. A lease taken and never released
// lapses TTL after the last Take: a job that runs every few intervals
// holds it that way across runs.
//
// A take that cannot complete within TTL is cancelled and fails: by
// then the lease it asked for would have lapsed anyway, and a holder
// must not go on working behind a renewal that hangs (ADR 0286).
func (l *Lease) Take(ctx context.Context) (bool, error) {
	return l.tryWithin(ctx, l.cfg.Clock.Now(), l.cfg.TTL)
}

// tryWithin asks the store for the lease at now, cancelled after bound.
func (l *Lease) tryWithin(ctx context.Context, now time.Time, bound time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	ok, err := l.store.TryLease(ctx, l.cfg.Name, l.cfg.Holder, now, l.cfg.TTL)
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", l.cfg.Name, err)
	}
	return ok, nil
}

// termLeft is how long a held lease has before it lapses (Keep's bound
// on its renewal: one that completes later renews a lease another holder
// may have taken meanwhile); the whole TTL when none is held. The
// caller holds l.mu.
func (l *Lease) termLeft(now time.Time) time.Duration {
	left := l.cfg.TTL - now.Sub(l.renewed)
	if !l.held || left <= 0 || left > l.cfg.TTL {
		return l.cfg.TTL
	}
	return left
}

// Release gives the lease up, also when ctx has ended (a stopping holder
// hands over at once); a failure is logged, and the lease lapses by
// itself.
func (l *Lease) Release(ctx context.Context) {
	l.mu.Lock()
	l.held = false
	l.mu.Unlock()
	if err := l.store.ReleaseLease(context.WithoutCancel(ctx), l.cfg.Name, l.cfg.Holder); err != nil {
		l.cfg.Logger.Warn("releasing a lease failed; it expires by itself", "lease", l.cfg.Name, "err", err)
	}
}

// Run takes the lease and, when this holder has it, runs fn and gives the
// lease up after. It reports whether the lease was held (fn ran); fn's
// error, or the failure to take the lease, is returned. A long fn renews
// with Take as it goes (ErrLost when that reports false).
func (l *Lease) Run(ctx context.Context, fn func(ctx context.Context) error) (held bool, err error) {
	ok, err := l.Take(ctx)
	if err != nil || !ok {
		return false, err
	}
	defer l.Release(ctx)
	return true, fn(ctx)
}

// ErrLost is Renew's error when another holder has taken the lease.
var ErrLost = errors.New("lease lost to another holder")

// Renew is Take for a holder in the middle of its work: it returns
// ErrLost (wrapped with the lease's name) when another holder has the
// lease, so the work stops.
func (l *Lease) Renew(ctx context.Context) error {
	ok, err := l.Take(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("lease %s: %w", l.cfg.Name, ErrLost)
	}
	return nil
}

// Term is what Keep found.
type Term struct {
	// Held: this holder has the lease.
	Held bool
	// Tried: Keep asked the metadata store (a take or a renewal) rather
	// than going on from the last renewal.
	Tried bool
	// Began: the lease was taken after not being held, so another holder
	// may have worked in between.
	Began bool
}

// Keep keeps the lease across runs of a loop: when it is not held it
// tries to take it, and when it is held it renews it once RenewAfter has
// passed since the last try, so a loop of short intervals writes every
// few seconds, not every run. Keep ends the term on an error.
func (l *Lease) Keep(ctx context.Context) (Term, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.Clock.Now()
	if l.held && now.Sub(l.renewed) <= l.cfg.RenewAfter {
		return Term{Held: true}, nil
	}
	ok, err := l.tryWithin(ctx, now, l.termLeft(now))
	t := Term{Held: ok, Tried: true, Began: ok && !l.held}
	l.held, l.renewed = ok, now
	return t, err
}

// Held reports whether the last Keep found the lease held.
func (l *Lease) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}
