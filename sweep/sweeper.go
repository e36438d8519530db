// Package sweep does claimcheck's due work in the background: it finishes
// claims whose due time has passed and collects the blobs they orphaned.
//
// Due work is mostly done in-line: every operation that loads a claim
// finishes it first if it is due. The Sweeper is for the rest — claims
// nobody asks about again — and follows the lockd sweeper design: no
// scans, only pages of due rows in due order read through the due-time
// index, in bounded runs. It paces itself (pace.go, ADR 0260): the pace
// grows while a backlog remains and backs off when the requests that meet
// its pages get slower than those that do not, except past max_lag, where
// the backlog wins. After idle_grace without traffic one replica (the
// maintenance lease) sweeps at full speed, aborted when traffic resumes.
// Every step is a compare-and-swap in the metadata store, so stale pages,
// concurrent sweepers and in-line sweeps never do work twice.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/internal/masterkey"
	"github.com/claimcheck/claimcheck/internal/tracing"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/service"
)

// Config bounds the sweeper. Zero fields take the defaults.
//
// The due sweeper paces itself (pace.go): OpDelay, MaxOpsPerRun,
// MaxRuntimePerRun and LagBudget are limits an operator may set on top of
// the pace, unset by default; the defaults WithDefaults fills in for them
// bound the GC backstop's pages and `Run`, not the pace.
type Config struct {
	// Disabled turns the background sweeper off (in-line sweeping still
	// happens; `claimcheck sweep --once` still works).
	Disabled bool `yaml:"disabled"`
	// IdleGrace is how long without operations before the store counts
	// as idle (default 5m): then one replica at a time (the maintenance
	// lease) sweeps with pages back to back, stopping when an operation
	// arrives, and the GC backstop runs. Before that the sweeper already
	// works at its pace.
	IdleGrace time.Duration `yaml:"idle_grace"`
	// OpDelay, when set, is the least pause between pages of a run
	// (unset: pages are spread over the tick by the pace, and follow each
	// other at once in an idle run). The GC backstop pauses the set value
	// or 100ms between its pages.
	OpDelay time.Duration `yaml:"op_delay"`
	// MaxOpsPerRun, when set, caps the items (claims finished plus blobs
	// collected) of one tick's run, so the pace is at most
	// MaxOpsPerRun per Interval (unset: no cap). The GC backstop does
	// MaxOpsPerRun/PageSize pages per tick (unset: 1000/PageSize).
	MaxOpsPerRun int `yaml:"max_ops_per_run"`
	// MaxRuntimePerRun, when set, is the longest one run takes (unset: a
	// run takes at most half an Interval under traffic, which leaves
	// requests time without a page, and one Interval while idle).
	MaxRuntimePerRun time.Duration `yaml:"max_runtime_per_run"`
	// MaxLag is the age of the oldest due item past which the backlog
	// wins over request latency: the pace no longer backs off, and it
	// grows twice as fast (default 1m). A replica that is idle but does
	// not hold the maintenance lease helps past it too.
	MaxLag time.Duration `yaml:"max_lag"`
	// LagBudget, when set, restores a fixed budget under traffic: the
	// sweeper then works under traffic only when the oldest due item is
	// older than MaxLag, LagBudget items per tick (unset: under traffic
	// it works whenever something is due, at its pace).
	LagBudget int `yaml:"lag_budget"`
	// Interval is how often the sweeper wakes up to decide, and the span
	// over which a tick's run spreads its pages (default 1s).
	Interval time.Duration `yaml:"interval"`
	// PageSize is the rows taken per transaction (default 250).
	PageSize int `yaml:"page_size"`
	// RetryDelay is the base delay before a failed object delete is
	// retried; it doubles per attempt up to an hour (default 30s). A blob
	// in deleting whose sweeper died is retried after RetryDelay too.
	RetryDelay time.Duration `yaml:"retry_delay"`
	// BackstopInterval is how often the GC backstop (backstop.go) starts
	// a pass over all blob rows and the bucket (default 6h; negative turns
	// it off). A pass in progress continues at every idle tick until done.
	BackstopInterval time.Duration `yaml:"backstop_interval"`
	// BackstopGrace is the grace period the backstop gives: a committed
	// blob it finds without a live claim is collected no earlier than
	// this, and an object without a row only once it is this old
	// (default 1h).
	BackstopGrace time.Duration `yaml:"backstop_grace"`
	// WriteStall is the longest a put in progress goes without writing:
	// the server's http.read_timeout (the longest pause of a request
	// body; serve and the operator commands set it from the same config
	// file), default DefaultWriteStall. A temp file of a write in
	// progress (the file backend's "<key>.<hex>.tmp") untouched for
	// TempGrace is debris: no put still writes it (ADR 0255).
	WriteStall time.Duration `yaml:"-"`
	// MaxAttempts is how many failed deletes of a blob's object are made
	// before the blob is parked as a dead letter (deadletter.go; default
	// 10). A parked blob keeps its row and object until an operator runs
	// `claimcheck dlq retry`.
	MaxAttempts int `yaml:"max_attempts"`
	// EventRetention is how long audit events are kept (retention.go);
	// zero or negative keeps them. Set from the config's events section.
	EventRetention time.Duration `yaml:"-"`
	// Scrub turns on the background scrub (scrub.go, ADR 0095): objects
	// are read whole and verified at ScrubRate, one replica at a time
	// (the scrub lease), and what is found is marked damaged. Off by
	// default; `claimcheck fsck --verify` runs the same scrub by hand.
	Scrub bool `yaml:"scrub"`
	// ScrubRate is the background scrub's budget in object bytes per
	// second (default 8 MiB/s, DefaultScrubRate).
	ScrubRate int64 `yaml:"scrub_bytes_per_second"`
	// HistoryRetention is how long finished claims and collected blobs
	// keep their rows (retention.go, ADR 0077), or their tombstones the
	// events retention when that is longer (a tombstone carries its
	// claim's audit trail, ADR 0266); zero or negative keeps them. Set
	// from the config's history section.
	HistoryRetention time.Duration `yaml:"-"`
	// PageWorkers is how many pages a maintenance run (idle, the
	// maintenance lease held, no op_delay set) keeps in flight at once
	// (0 or 1: one at a time). Several pages help only where the
	// metadata store takes due pages with concurrent writers that skip
	// each other's rows (PostgreSQL, FOR UPDATE SKIP LOCKED): the engine
	// sets MaintenancePageWorkers there, and leaves SQLite, which has
	// one writer, at one page.
	PageWorkers int `yaml:"-"`
}

// MaintenancePageWorkers is the PageWorkers the engine sets for a
// metadata store with concurrent writers: a page spends most of its time
// waiting on database round trips, so a few in flight multiply the idle
// drain rate without a pool of connections per sweeper.
const MaintenancePageWorkers = 4

// WithDefaults returns c with zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.IdleGrace, 5*time.Minute)
	def(&c.OpDelay, 100*time.Millisecond)
	def(&c.MaxRuntimePerRun, 30*time.Second)
	def(&c.MaxLag, time.Minute)
	def(&c.Interval, time.Second)
	def(&c.RetryDelay, 30*time.Second)
	def(&c.BackstopInterval, 6*time.Hour)
	def(&c.BackstopGrace, time.Hour)
	def(&c.WriteStall, DefaultWriteStall)
	if c.MaxOpsPerRun == 0 {
		c.MaxOpsPerRun = 1000
	}
	if c.LagBudget == 0 {
		c.LagBudget = 100
	}
	if c.PageSize == 0 {
		c.PageSize = 250
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.ScrubRate == 0 {
		c.ScrubRate = DefaultScrubRate
	}
	return c
}

// DefaultWriteStall is WriteStall when none is given: the server's
// default http.read_timeout.
const DefaultWriteStall = time.Minute

// TempGrace is the age past which a temp file of a write (IsTempKey) is
// debris: twice WriteStall (a put's engine may hold bytes a little
// before writing them), never more than BackstopGrace. A put that does
// stall longer loses its temp file and fails at its end (the rename finds
// no file); it is never acknowledged.
func (c Config) TempGrace() time.Duration {
	c = c.WithDefaults()
	return min(2*c.WriteStall, c.BackstopGrace)
}

// IsTempKey reports whether a listed key is the temp file of a write in
// progress or of one killed mid-write: the file backend writes
// "<key>.<hex>.tmp" and renames it at the end. The engine's own keys
// ("<namespace>/<blob id>") never end in ".tmp".
func IsTempKey(key string) bool { return strings.HasSuffix(key, ".tmp") }

// MaxPageSize bounds sweeper.page_size: the rows of one transaction,
// which holds its locks (and on SQLite the writer) that long.
const MaxPageSize = 10000

// Validate refuses negative bounds and a page above MaxPageSize, naming
// the field.
func (c Config) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"idle_grace", c.IdleGrace}, {"op_delay", c.OpDelay}, {"max_runtime_per_run", c.MaxRuntimePerRun},
		{"max_lag", c.MaxLag}, {"interval", c.Interval}, {"retry_delay", c.RetryDelay}, {"backstop_grace", c.BackstopGrace}} {
		if d.v < 0 {
			return fmt.Errorf("sweeper.%s %s: must not be negative", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"max_ops_per_run", c.MaxOpsPerRun}, {"lag_budget", c.LagBudget}, {"page_size", c.PageSize}, {"max_attempts", c.MaxAttempts}} {
		if n.v < 0 {
			return fmt.Errorf("sweeper.%s %d: must not be negative", n.name, n.v)
		}
	}
	if c.PageSize > MaxPageSize {
		return fmt.Errorf("sweeper.page_size %d: at most %d", c.PageSize, MaxPageSize)
	}
	if c.ScrubRate < 0 {
		return fmt.Errorf("sweeper.scrub_bytes_per_second %d: must not be negative", c.ScrubRate)
	}
	return nil
}

// Sweeper finishes due claims and collects orphaned blobs.
type Sweeper struct {
	cfg     Config
	meta    Store
	blobs   blob.Store
	clock   clock.Clock
	log     *slog.Logger
	metrics *Metrics

	holder   string // this sweeper's name in the maintenance lease
	backstop *Backstop
	// tracer starts a trace per pass of background work (tracing.go);
	// nil: tracing off.
	tracer *tracing.Tracer

	// The background scrub (scrub.go), made by New; its budget
	// accrues at ScrubRate per second of the clock between ticks.
	scrubMu     sync.Mutex
	scrub       *Scrub
	scrubLast   time.Time
	scrubBudget int64

	// Pacing (pace.go): the operator's limits, the pace, the request
	// latencies the engine reports (Begin, Done) and the page counter
	// they are classified by (odd while a page is in flight).
	limits  limits
	pacer   pacer
	latency latencySums
	pageSeq atomic.Uint64
	sleep   func(context.Context, time.Duration) error // waits between pages on the clock; tests replace it

	// flightMu orders the changes of pageSeq with inFlight, the pages in
	// flight: pageSeq turns odd when the first one starts and even when
	// the last one ends, so overlapping pages (PageWorkers) keep it odd.
	flightMu sync.Mutex
	inFlight int

	lastOp    atomic.Int64 // unix nanos of the last operation (Touch)
	lastPrune atomic.Int64 // unix nanos of the last pruning of events and history (retention.go)
	runMu     sync.Mutex   // one run at a time in this process

	// One runner across replicas: the maintenance run (Tick), the scrub
	// (scrub.go) and pruning (retention.go) each hold a lease.
	maintenance, scrubLease, pruneLease *service.Lease

	// wait is the clock the background loop's schedule and the pauses
	// between pages are on: real time. The decisions read s.clock; the
	// engine's tests move a fake one with the loop running, and a fake
	// schedule would wake the loop at every move (and hold a run's pause,
	// with runMu, until the next). Tests of the loop set a fake one.
	wait clock.Clock
	svc  service.StartStop
}

// New returns a sweeper over the given stores. keys are the master keys
// its scrub unwraps data keys with, to read encrypted objects back (nil
// when none is configured). metrics may be shared with the caller (the
// engine counts in-line finishes in the same counters); nil creates
// unregistered ones.
func New(cfg Config, m Store, b blob.Store, keys *masterkey.Ring, clk clock.Clock, log *slog.Logger, metrics *Metrics) *Sweeper {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Sweeper{cfg: cfg.WithDefaults(), limits: limitsOf(cfg), meta: m, blobs: b, clock: clk, log: log, metrics: metrics,
		holder: meta.LeaseHolder(), wait: clock.Real{}}
	s.sleep = func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, s.wait, d) }
	lease := func(name string, ttl time.Duration) *service.Lease {
		return service.NewLease(m, service.LeaseConfig{Name: name, Holder: s.holder, TTL: ttl, Clock: clk, Logger: log})
	}
	// The maintenance lease outlives the longest run; the scrub's is held
	// across ticks while this replica scrubs and lapses a few intervals
	// after it stops; pruning's lapses when the next pruning is due.
	s.maintenance = lease(MaintenanceLease, s.cfg.MaxRuntimePerRun+s.cfg.Interval)
	s.scrubLease = lease(ScrubLease, 3*s.cfg.Interval+s.cfg.MaxRuntimePerRun)
	s.pruneLease = lease(EventsLease, pruneEvery)
	s.pacer.pace = minPace
	metrics.Pace.Set(minPace)
	s.backstop = NewBackstop(cfg, m, b, clk, log, metrics)
	s.scrub = NewScrub(m, b, keys, clk, log, metrics, s.cfg.PageSize)
	s.lastOp.Store(clk.Now().UnixNano())
	return s
}

// Touch records an operation: the store is busy, so idle maintenance
// waits (and a running one stops). Begin does the same and also times
// the operation for the pace.
func (s *Sweeper) Touch() { s.lastOp.Store(s.clock.Now().UnixNano()) }

func (s *Sweeper) idleSince() time.Time { return time.Unix(0, s.lastOp.Load()) }

// Start runs the background loop until Stop. It returns at once.
func (s *Sweeper) Start(ctx context.Context) {
	s.svc.Start(ctx, func(ctx context.Context) {
		_ = service.Every(ctx, service.Config{Name: "sweeper", Interval: s.cfg.Interval, Clock: s.wait}, s.loopTick)
	})
}

// Stop ends the background loop and waits for it. A run in progress stops
// after its current step; finished work is never redone. Stop is
// idempotent.
func (s *Sweeper) Stop() { s.svc.Stop() }

// loopTick is one tick of the background loop: due work, the backstop,
// retention and the scrub, each logging its own failures.
func (s *Sweeper) loopTick(ctx context.Context) {
	if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("sweep: run failed; retrying next tick", "err", err)
	}
	s.tickBackstop(ctx)
	s.tickRetention(ctx)
	_, _ = s.TickScrub(ctx) // it logs its own failures, the lease's too
}

// Tick decides whether to work now and does one bounded run if so. With
// anything due it works at its pace (pace.go): under traffic with pages
// spread over the tick and sized for the request latency; after
// idle_grace without operations, holding the maintenance lease, with
// pages back to back until the tick is over or traffic resumes. A replica
// that is idle without the lease helps only past max_lag. When lag_budget
// is set, under traffic it works only past max_lag, lag_budget items per
// tick. The loop calls Tick every interval; tests call it directly with a
// fake clock.
func (s *Sweeper) Tick(ctx context.Context) (Result, error) {
	now := s.clock.Now()
	oldest, err := s.meta.OldestDue(ctx)
	if err != nil {
		return Result{}, err
	}
	lag := time.Duration(0)
	if !oldest.IsZero() && oldest.Before(now) {
		lag = now.Sub(oldest)
	}
	s.metrics.Lag.Set(lag.Seconds())
	s.refreshDeadLetters(ctx)
	if oldest.IsZero() || oldest.After(now) {
		return Result{}, nil // nothing due
	}
	pastLag := lag > s.cfg.MaxLag
	if now.Sub(s.idleSince()) >= s.cfg.IdleGrace {
		// One maintenance runner across all replicas: the lease outlives
		// the longest run, and a runner that dies lets it expire.
		var res Result
		held, err := s.maintenance.Run(ctx, func(ctx context.Context) (err error) {
			res, err = s.paced(ctx, pastLag, true)
			return err
		})
		if held || err != nil {
			return res, err
		}
		if !pastLag {
			return Result{}, nil // the lease holder sweeps
		}
		return s.paced(ctx, true, false)
	}
	if s.limits.lagBudget > 0 {
		if !pastLag {
			return Result{}, nil
		}
		return s.run(ctx, s.limits.lagBudget, false)
	}
	return s.paced(ctx, pastLag, false)
}

// MaintenanceLease is the lease a sweeper holds during a maintenance run.
const MaintenanceLease = "sweeper-maintenance"

// Result counts the work of one run.
type Result struct {
	ClaimsFinished int
	BlobsCollected int
	DeleteFailures int
	Aborted        bool // traffic resumed during a maintenance run
}

// Ops is the number of items done.
func (r Result) Ops() int { return r.ClaimsFinished + r.BlobsCollected }

// RunOnce does up to maxOps items of due work now, ignoring idleness and
// runtime bounds (for `claimcheck sweep --once` and tests); maxOps <= 0
// means until nothing is due.
func (s *Sweeper) RunOnce(ctx context.Context, maxOps int) (Result, error) {
	return s.runBounded(ctx, maxOps, false, 0, 0)
}

// Run does one maintenance-sized run now, with the configured bounds
// (max_ops_per_run, max_runtime_per_run, op_delay) but without waiting
// for idleness or stopping for traffic: the most the sweeper ever does at
// once. Benchmarks use it to measure the sweeper at full budget.
func (s *Sweeper) Run(ctx context.Context) (Result, error) {
	return s.run(ctx, s.cfg.MaxOpsPerRun, false)
}

func (s *Sweeper) run(ctx context.Context, maxOps int, idleOnly bool) (Result, error) {
	return s.runBounded(ctx, maxOps, idleOnly, s.cfg.MaxRuntimePerRun, s.cfg.OpDelay)
}

// runBounded pages through due claims, then due blobs, until maxOps
// items (0: no limit), maxRuntime (0: no limit) or the due work runs out,
// pausing opDelay between pages: an unpaced run (RunOnce, Run, the
// lag_budget rule). Each page is one transaction.
func (s *Sweeper) runBounded(ctx context.Context, maxOps int, idleOnly bool, maxRuntime, opDelay time.Duration) (Result, error) {
	b := bounds{budget: maxOps, page: s.cfg.PageSize, span: maxRuntime, busy: unbounded, opDelay: opDelay}
	if b.span <= 0 {
		b.span = unbounded
	}
	res, _, err := s.pages(ctx, b, idleOnly)
	return res, err
}

// sweeperActor names the sweeper in the audit trail of due work, unless
// the caller named someone.
func (s *Sweeper) sweeperActor(ctx context.Context) context.Context {
	if claimcheck.ActorFrom(ctx) == "" {
		return claimcheck.WithActor(ctx, meta.ActorSweeper)
	}
	return ctx
}

func (s *Sweeper) finishClaims(ctx context.Context, limit int, res *Result) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	ctx, span := s.tracer.Start(ctx, spanFinish)
	done, err := s.meta.FinishDueClaims(ctx, s.clock.Now(), limit)
	traceFinished(span, done, err)
	if err != nil {
		return 0, fmt.Errorf("sweep: finish due claims: %w", err)
	}
	for _, f := range done {
		s.metrics.ObserveFinished(f)
	}
	res.ClaimsFinished += len(done)
	s.metrics.ItemsDone.WithLabelValues("claim").Add(float64(len(done)))
	return len(done), nil
}

// collectBlobs moves a page of due blobs to deleting, deletes their
// objects (in batches where the backend can), and marks them deleted. A
// blob whose delete failed is retried with exponential backoff.
func (s *Sweeper) collectBlobs(ctx context.Context, limit int, res *Result) (n int, err error) {
	ctx, span := s.tracer.Start(ctx, spanCollect)
	before := *res
	defer func() { endCollect(span, n, *res, before, err) }()
	now := s.clock.Now()
	blobs, err := s.meta.BeginCollect(ctx, now, limit, s.cfg.RetryDelay)
	if err != nil {
		return 0, fmt.Errorf("sweep: begin collect: %w", err)
	}
	if len(blobs) == 0 {
		return 0, nil
	}
	failed := s.deleteObjects(ctx, blobs)
	var ok []string
	var bytes int64
	for _, b := range blobs {
		if cause, bad := failed[b.Key]; bad {
			res.DeleteFailures++
			s.metrics.DeleteFailures.Inc()
			s.deleteFailed(ctx, b, cause, now)
			continue
		}
		ok = append(ok, b.ID)
		bytes += b.StoredSize
	}
	if len(ok) > 0 {
		// The objects are gone: record it even if the run is stopping, so
		// the deletes are not repeated.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := s.meta.FinishCollect(cctx, ok, s.clock.Now()); err != nil {
			return len(blobs), fmt.Errorf("sweep: finish collect: %w", err)
		}
	}
	res.BlobsCollected += len(ok)
	s.metrics.GC.Candidates.Add(float64(len(blobs)))
	s.metrics.ItemsDone.WithLabelValues("blob").Add(float64(len(ok)))
	s.metrics.BlobsCollected.Add(float64(len(ok)))
	s.metrics.BytesCollected.Add(float64(bytes))
	return len(blobs), nil
}

// deleteObjects deletes the blobs' objects, batched when the backend
// supports it, and returns the keys that failed. A blob whose object was
// still being appended to (a resumable upload that never completed) is
// aborted with its handle instead: that removes the parts the storage
// keeps beside the object (an S3 multipart upload) as well as the
// object, found from the row alone.
func (s *Sweeper) deleteObjects(ctx context.Context, blobs []meta.Blob) map[string]error {
	failed := map[string]error{}
	keys := make([]string, 0, len(blobs))
	ab := blob.AbilitiesOf(s.blobs)
	ap, appends := ab.Appender, ab.Appender != nil
	for _, b := range blobs {
		if b.AppendHandle == "" || !appends {
			keys = append(keys, b.Key)
			continue
		}
		if err := ap.AbortAppend(ctx, b.Key, b.AppendHandle); err != nil {
			failed[b.Key] = err
		}
	}
	if bd := ab.BatchDeleter; bd != nil && bd.MaxBatch() > 1 {
		for len(keys) > 0 {
			n := min(len(keys), bd.MaxBatch())
			batch := keys[:n]
			keys = keys[n:]
			bad, err := bd.DeleteMany(ctx, batch)
			if err != nil {
				for _, k := range batch {
					failed[k] = err
				}
				continue
			}
			for k, e := range bad {
				failed[k] = e
			}
		}
		return failed
	}
	for _, k := range keys {
		if err := s.blobs.Delete(ctx, k); err != nil && !errors.Is(err, blob.ErrNotFound) {
			failed[k] = err
		}
	}
	return failed
}

// backoff is base·2^(attempt-1), at most an hour.
func backoff(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

// Metrics are the sweeper's instruments; the engine shares the finished
// counters for its in-line sweeps.
type Metrics struct {
	Finished       *prometheus.CounterVec // claims finished, by reason
	Lifetime       prometheus.Histogram   // created → finished
	ItemsDone      *prometheus.CounterVec // by kind: claim, blob
	DeleteFailures prometheus.Counter
	BlobsCollected prometheus.Counter
	BytesCollected prometheus.Counter
	RunDuration    prometheus.Histogram
	Aborts         prometheus.Counter
	Lag            prometheus.Gauge       // age of the oldest due item at the last tick
	Pace           prometheus.Gauge       // the background sweeper's pace, items per second (pace.go)
	EventsPruned   prometheus.Counter     // audit events deleted by retention
	HistoryPruned  *prometheus.CounterVec // finished claims and collected blobs deleted by retention, by table
	GC             *GCMetrics             // backstop and collection candidates
	Reaper         *ReaperMetrics         // reaped pending claims, refunds, dead letters (deadletter.go)
}

// NewMetrics creates the sweeper metrics and registers them on reg (nil:
// not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_claims_deleted_total",
			Help: "Claims finished, by reason (expired, released, read_retention_over, deleted, never_confirmed, aborted)."}, []string{"reason"}),
		Lifetime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "claimcheck_claim_lifetime_seconds",
			Help: "Time from a claim's creation to its end.", Buckets: prometheus.ExponentialBuckets(1, 4, 12)}),
		ItemsDone: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_sweeper_items_total",
			Help: "Items of due work done by the background sweeper, by kind."}, []string{"kind"}),
		DeleteFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_delete_failures_total",
			Help: "Object deletes that failed and will be retried."}),
		BlobsCollected: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_gc_collected_blobs_total",
			Help: "Blobs whose objects were deleted."}),
		BytesCollected: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_gc_collected_bytes_total",
			Help: "Object bytes reclaimed."}),
		RunDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "claimcheck_sweeper_run_duration_seconds",
			Help: "Duration of sweeper runs.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		Aborts: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_sweeper_aborts_total",
			Help: "Maintenance runs stopped because traffic resumed."}),
		Lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "claimcheck_sweeper_lag_seconds",
			Help: "Age of the oldest due item (0 when nothing is overdue)."}),
		Pace: prometheus.NewGauge(prometheus.GaugeOpts{Name: "claimcheck_sweeper_pace_items_per_second",
			Help: "Items of due work per second the background sweeper aims at: it grows with the backlog and backs off when requests slow down."}),
		EventsPruned: prometheus.NewCounter(prometheus.CounterOpts{Name: "claimcheck_events_pruned_total",
			Help: "Audit events deleted because they were older than events.retention."}),
		HistoryPruned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_history_pruned_total",
			Help: "Rows of finished claims and collected blobs deleted because they were older than history.retention, by table (claims, blobs)."}, []string{"table"}),
	}
	m.GC = newGCMetrics(reg)
	m.Reaper = newReaperMetrics(reg)
	if reg != nil {
		reg.MustRegister(m.Finished, m.Lifetime, m.ItemsDone, m.DeleteFailures, m.BlobsCollected,
			m.BytesCollected, m.RunDuration, m.Aborts, m.Lag, m.Pace, m.EventsPruned, m.HistoryPruned)
	}
	return m
}

// ObserveFinished counts one finished claim.
func (m *Metrics) ObserveFinished(f meta.FinishResult) {
	m.Finished.WithLabelValues(f.Claim.DeleteReason).Inc()
	m.Reaper.observe(f)
	if !f.Claim.DeletedAt.IsZero() && !f.Claim.CreatedAt.IsZero() {
		m.Lifetime.Observe(f.Claim.DeletedAt.Sub(f.Claim.CreatedAt).Seconds())
	}
}
