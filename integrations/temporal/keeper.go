package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/service"
)

// The keeper keeps the claims of Temporal payloads exactly as long as
// their workflow run needs them (ADR 0102). The driver labels every claim
// with the run that owns it (temporal.namespace, temporal.workflow_id,
// temporal.run_id); the claimcheck namespace's max_age only has to
// outlast the keeper's interval, and the keeper, every interval:
//
//   - lists the live claims of its namespaces that expire within Horizon
//     (soonest first, a page at a time: an index range, ADR 0100);
//   - asks Temporal once per distinct run of a page
//     (DescribeWorkflowExecution) and once per Temporal namespace and pass
//     for its retention (DescribeNamespace);
//   - open run: extends its claims to now + ExtendBy;
//     closed run: extends them to close time + retention + Margin, the
//     last moment a replay of its history may read them;
//     run Temporal does not know (never started, or deleted after its
//     retention): leaves them to expire.
//
// It never deletes and never shortens: an extension to an earlier expiry
// changes nothing, so several keepers (or a keeper that crashed halfway)
// converge on the same expiries, each no later than the claim's
// ttl.max_lifetime. Claims without the run labels (the codec without a
// workflow context, OffloadFields) are left to their max_age.

// Label keys the driver writes and the keeper reads.
const (
	LabelNamespace  = "temporal.namespace"
	LabelWorkflowID = "temporal.workflow_id"
	LabelRunID      = "temporal.run_id"
)

// KeeperClaims is what the keeper needs of a claimcheck store: the
// contract's Claims, whose List and Extend it uses (client.Client and
// *engine.Store implement it).
type KeeperClaims interface {
	claimcheck.Claims
}

// KeeperOptions configure a Keeper. Zero values take the defaults.
type KeeperOptions struct {
	// Namespaces are the claimcheck namespaces to keep (default
	// DefaultNamespace).
	Namespaces []string
	// Interval between passes of Run (default 5m). The claimcheck
	// namespace's max_age must be longer than Interval plus a safety
	// margin: a claim is first extended by the first pass after its put.
	Interval time.Duration
	// Horizon: a pass looks at the claims expiring within it (default
	// 3 × Interval, so a claim is seen at least twice before it
	// expires and one failed pass is survived).
	Horizon time.Duration
	// ExtendBy: an open run's claims are extended to now + ExtendBy
	// (default 2 × Horizon, so an extended claim leaves the horizon for
	// about one Horizon and each claim costs one extension per Horizon).
	ExtendBy time.Duration
	// Margin is added to a closed run's close time plus retention
	// (default 1h): clock skew, and the time Temporal takes to delete.
	Margin time.Duration
	// Retention, when set, replaces the retention Temporal reports for
	// every namespace (tests; or a retention the keeper may not read).
	Retention time.Duration
	// CallsPerSecond bounds the keeper's calls to Temporal and claimcheck
	// together (default 50).
	CallsPerSecond float64
	// Concurrency bounds the calls in flight (default 4).
	Concurrency int
	// PageSize is the listing's page size (default 500).
	PageSize int
	// Logger gets one line per batch of decisions (default slog.Default).
	Logger *slog.Logger
	// Registerer, when set, gets the keeper's metrics.
	Registerer prometheus.Registerer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// KeeperReport counts what a pass did.
type KeeperReport struct {
	Claims       int // claims looked at
	Runs         int // distinct runs asked about
	Open         int // of which open
	Closed       int // of which closed
	Unknown      int // of which Temporal does not know
	Unowned      int // claims without the run labels, left to expire
	Extended     int // claims whose expiry moved
	AtLifetime   int // claims that reached their ttl.max_lifetime
	TemporalCall int // calls to Temporal
	ClaimsCalls  int // calls to claimcheck (list pages, policies, extensions)
	Errors       int
}

// Keeper extends the claims of open Temporal runs; see the top of this
// file. Run it inside a worker process (Start, and Stop when the worker
// stops), or on its own with cmd/claimcheck-temporal-keeper. Safe for
// concurrent use; passes of one Keeper do not overlap.
type Keeper struct {
	claims   KeeperClaims
	temporal workflowservice.WorkflowServiceClient
	o        KeeperOptions
	limit    *limiter
	m        keeperMetrics
	pass     sync.Mutex
	svc      service.StartStop
}

type keeperMetrics struct {
	extended, runs, errors *prometheus.CounterVec
}

// NewKeeper returns a keeper of claims in c for the runs ts knows
// (client.Client's WorkflowService()).
func NewKeeper(c KeeperClaims, ts workflowservice.WorkflowServiceClient, o KeeperOptions) (*Keeper, error) {
	if c == nil || ts == nil {
		return nil, fmt.Errorf("%w: keeper: claims and Temporal service are required", claimcheck.ErrInvalidArgument)
	}
	if len(o.Namespaces) == 0 {
		o.Namespaces = []string{DefaultNamespace}
	}
	for _, ns := range o.Namespaces {
		if err := claimcheck.ValidateNamespace(ns); err != nil {
			return nil, fmt.Errorf("keeper: %w", err)
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Interval, 5*time.Minute)
	def(&o.Horizon, 3*o.Interval)
	def(&o.ExtendBy, 2*o.Horizon)
	def(&o.Margin, time.Hour)
	if o.Interval < 0 || o.Horizon <= 0 || o.Margin < 0 || o.Retention < 0 {
		return nil, fmt.Errorf("%w: keeper: durations must not be negative", claimcheck.ErrInvalidArgument)
	}
	if o.ExtendBy <= o.Horizon {
		return nil, fmt.Errorf("%w: keeper: ExtendBy %s must be longer than Horizon %s, or extended claims stay within the horizon and are extended again every pass",
			claimcheck.ErrInvalidArgument, o.ExtendBy, o.Horizon)
	}
	if o.CallsPerSecond == 0 {
		o.CallsPerSecond = 50
	}
	if o.CallsPerSecond < 0 {
		return nil, fmt.Errorf("%w: keeper: CallsPerSecond %g must be positive", claimcheck.ErrInvalidArgument, o.CallsPerSecond)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	o.PageSize = min(o.PageSize, claimcheck.MaxListLimit)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	k := &Keeper{claims: c, temporal: ts, o: o, limit: newLimiter(o.CallsPerSecond)}
	k.m = keeperMetrics{
		extended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_temporal_keeper_claims_extended_total",
			Help: "Claims whose expiry the keeper moved, by claimcheck namespace and run status (open, closed)."}, []string{"namespace", "run"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_temporal_keeper_runs_checked_total",
			Help: "Workflow runs the keeper asked Temporal about, by claimcheck namespace and result (open, closed, unknown)."}, []string{"namespace", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "claimcheck_temporal_keeper_errors_total",
			Help: "Failed keeper calls, by claimcheck namespace and call (list, describe_run, describe_namespace, extend, policy)."}, []string{"namespace", "call"}),
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{k.m.extended, k.m.runs, k.m.errors} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("keeper: metrics: %w", err)
			}
		}
	}
	return k, nil
}

// Run runs a pass at once and then every Interval (real time) until ctx
// ends, and returns ctx's error. A failed pass is logged and counted; the
// next one tries again.
func (k *Keeper) Run(ctx context.Context) error {
	return service.Every(ctx, service.Config{Name: "temporal keeper", Interval: k.o.Interval, RunAtStart: true}, func(ctx context.Context) {
		if _, err := k.RunOnce(ctx); err != nil && ctx.Err() == nil {
			k.o.Logger.Warn("claimcheck temporal keeper: pass failed", "err", err)
		}
	})
}

// Start runs Run in the background until Stop, and returns at once; a
// second Start, or one after Stop, does nothing.
func (k *Keeper) Start(ctx context.Context) {
	k.svc.Start(ctx, func(ctx context.Context) { _ = k.Run(ctx) })
}

// Stop ends what Start began and waits for the pass in flight to stop.
// It is idempotent.
func (k *Keeper) Stop() { k.svc.Stop() }

// runKey names one workflow run.
type runKey struct{ ns, wf, run string }

// RunOnce runs one pass over every namespace and reports it. The error
// joins what failed; what succeeded stays done.
func (k *Keeper) RunOnce(ctx context.Context) (KeeperReport, error) {
	k.pass.Lock()
	defer k.pass.Unlock()
	// A pass is a trace of its own (through the application's global
	// tracer provider; none set up: nothing), whose claimcheck calls
	// carry it to the server's spans (tracing.go).
	ctx, span := otel.Tracer(tracerName).Start(ctx, "claimcheck.temporal.keeper", trace.WithNewRoot())
	var (
		total KeeperReport
		errs  []error
	)
	defer func() { endKeeperPass(span, total, errors.Join(errs...)) }()
	retention := map[string]time.Duration{} // per pass: a namespace's retention may change
	for _, ns := range k.o.Namespaces {
		r, err := k.passNamespace(ctx, ns, retention)
		total.add(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	return total, errors.Join(errs...)
}

func (r *KeeperReport) add(o KeeperReport) {
	r.Claims += o.Claims
	r.Runs += o.Runs
	r.Open += o.Open
	r.Closed += o.Closed
	r.Unknown += o.Unknown
	r.Unowned += o.Unowned
	r.Extended += o.Extended
	r.AtLifetime += o.AtLifetime
	r.TemporalCall += o.TemporalCall
	r.ClaimsCalls += o.ClaimsCalls
	r.Errors += o.Errors
}

func (k *Keeper) passNamespace(ctx context.Context, ns string, retention map[string]time.Duration) (KeeperReport, error) {
	var rep KeeperReport
	if err := k.limit.wait(ctx); err != nil {
		return rep, err
	}
	rep.ClaimsCalls++
	pol, err := k.claims.Policy(ctx, ns)
	if err != nil {
		rep.Errors++
		k.m.errors.WithLabelValues(ns, "policy").Inc()
		return rep, err
	}
	lifetime := pol.TTL.Lifetime()
	now := k.o.Now()
	opts := claimcheck.ListOptions{Order: claimcheck.ListExpiring, State: claimcheck.StateActive,
		ExpiresBefore: now.Add(k.o.Horizon), Limit: k.o.PageSize}
	seen := map[string]bool{} // a claim extended within the horizon may come round again
	for {
		if err := k.limit.wait(ctx); err != nil {
			return rep, err
		}
		rep.ClaimsCalls++
		page, err := k.claims.List(ctx, ns, opts)
		if err != nil {
			rep.Errors++
			k.m.errors.WithLabelValues(ns, "list").Inc()
			return rep, err
		}
		var fresh []claimcheck.ClaimInfo
		for _, c := range page.Claims {
			if !seen[c.Ref.ID] {
				seen[c.Ref.ID] = true
				fresh = append(fresh, c)
			}
		}
		b := k.batch(ctx, ns, fresh, lifetime, retention)
		rep.add(b)
		if page.Next == "" || ctx.Err() != nil {
			return rep, ctx.Err()
		}
		opts.Cursor = page.Next
	}
}

// runState is what Temporal said about one run.
type runState struct {
	known, open bool
	keepUntil   time.Time // closed: close + retention + margin
	err         error
}

// batch decides for one page of claims: one describe per distinct run,
// then the extensions, and one log line.
func (k *Keeper) batch(ctx context.Context, ns string, cs []claimcheck.ClaimInfo, lifetime time.Duration, retention map[string]time.Duration) KeeperReport {
	rep := KeeperReport{Claims: len(cs)}
	if len(cs) == 0 {
		return rep
	}
	byRun := map[runKey][]claimcheck.ClaimInfo{}
	for _, c := range cs {
		// A claim made before its run existed (a start input: the
		// starter stores it before Temporal assigns the run id) has no
		// run id; it is kept by the workflow id's latest run, which
		// started and closes no earlier than the run it belongs to, so
		// the claim is kept at least as long as it is needed.
		key := runKey{c.Labels[LabelNamespace], c.Labels[LabelWorkflowID], c.Labels[LabelRunID]}
		if key.ns == "" || key.wf == "" {
			rep.Unowned++
			continue
		}
		byRun[key] = append(byRun[key], c)
	}
	states := map[runKey]runState{}
	var mu sync.Mutex
	forEach(k.o.Concurrency, keysOf(byRun), func(key runKey) {
		st := k.describe(ctx, ns, key, retention, &mu, &rep)
		mu.Lock()
		states[key] = st
		mu.Unlock()
	})
	now := k.o.Now()
	type job struct {
		c      claimcheck.ClaimInfo
		target time.Time
		open   bool
	}
	var jobs []job
	for key, claims := range byRun {
		st := states[key]
		switch {
		case st.err != nil:
			rep.Errors++
			continue
		case !st.known:
			rep.Unknown++
			k.m.runs.WithLabelValues(ns, "unknown").Inc()
			continue
		case st.open:
			rep.Open++
			k.m.runs.WithLabelValues(ns, "open").Inc()
		default:
			rep.Closed++
			k.m.runs.WithLabelValues(ns, "closed").Inc()
		}
		rep.Runs++
		for _, c := range claims {
			target := st.keepUntil
			if st.open {
				target = now.Add(k.o.ExtendBy)
			}
			// Whole seconds, as references carry expiries: a target
			// with a fraction would always look later than the
			// reference says, and be sent again every pass.
			target = ceilSecond(target)
			if limit := c.Ref.CreatedAt.Add(lifetime); target.After(limit) {
				// The store refuses past max_lifetime; the claim keeps
				// what it may have, and the log says so.
				target = limit
				rep.AtLifetime++
			}
			if !target.After(c.Ref.ExpiresAt) {
				continue // already kept long enough: nothing to do
			}
			jobs = append(jobs, job{c, target, st.open})
		}
	}
	forEach(k.o.Concurrency, jobs, func(j job) {
		if err := k.limit.wait(ctx); err != nil {
			return
		}
		_, err := k.claims.Extend(ctx, j.c.Ref, claimcheck.ExtendOptions{ExpiresAt: j.target})
		mu.Lock()
		defer mu.Unlock()
		rep.ClaimsCalls++
		if err != nil {
			// A claim finished meanwhile (gone) is not the keeper's
			// problem; anything else is counted and logged.
			if !errors.Is(err, claimcheck.ErrGone) {
				rep.Errors++
				k.m.errors.WithLabelValues(ns, "extend").Inc()
				k.o.Logger.Warn("claimcheck temporal keeper: extend failed", "claim", j.c.Ref.ID, "err", err)
			}
			return
		}
		rep.Extended++
		run := "closed"
		if j.open {
			run = "open"
		}
		k.m.extended.WithLabelValues(ns, run).Inc()
	})
	k.o.Logger.Info("claimcheck temporal keeper: batch", "namespace", ns, "claims", rep.Claims, "runs", rep.Runs,
		"open", rep.Open, "closed", rep.Closed, "unknown", rep.Unknown, "unowned", rep.Unowned,
		"extended", rep.Extended, "at_max_lifetime", rep.AtLifetime, "errors", rep.Errors)
	return rep
}

// describe asks Temporal about one run (and, for a closed run, its
// namespace's retention once per pass).
func (k *Keeper) describe(ctx context.Context, ns string, key runKey, retention map[string]time.Duration, mu *sync.Mutex, rep *KeeperReport) runState {
	if err := k.limit.wait(ctx); err != nil {
		return runState{err: err}
	}
	mu.Lock()
	rep.TemporalCall++
	mu.Unlock()
	resp, err := k.temporal.DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: key.ns, Execution: &commonpb.WorkflowExecution{WorkflowId: key.wf, RunId: key.run}})
	var nf *serviceerror.NotFound
	var nsnf *serviceerror.NamespaceNotFound
	switch {
	case errors.As(err, &nf), errors.As(err, &nsnf):
		return runState{} // unknown: left to expire
	case err != nil:
		k.m.errors.WithLabelValues(ns, "describe_run").Inc()
		k.o.Logger.Warn("claimcheck temporal keeper: describe run failed", "temporal_namespace", key.ns, "workflow_id", key.wf, "run_id", key.run, "err", err)
		return runState{err: err}
	}
	info := resp.GetWorkflowExecutionInfo()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || info.GetCloseTime() == nil {
		return runState{known: true, open: true}
	}
	ret, err := k.retention(ctx, ns, key.ns, retention, mu, rep)
	if err != nil {
		return runState{err: err}
	}
	return runState{known: true, keepUntil: info.GetCloseTime().AsTime().Add(ret + k.o.Margin)}
}

// retention returns a Temporal namespace's retention, asked once per pass.
func (k *Keeper) retention(ctx context.Context, ns, tns string, cache map[string]time.Duration, mu *sync.Mutex, rep *KeeperReport) (time.Duration, error) {
	if k.o.Retention > 0 {
		return k.o.Retention, nil
	}
	mu.Lock()
	d, ok := cache[tns]
	mu.Unlock()
	if ok {
		return d, nil
	}
	if err := k.limit.wait(ctx); err != nil {
		return 0, err
	}
	resp, err := k.temporal.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: tns})
	mu.Lock()
	defer mu.Unlock()
	rep.TemporalCall++
	if err != nil {
		k.m.errors.WithLabelValues(ns, "describe_namespace").Inc()
		return 0, fmt.Errorf("describe Temporal namespace %s: %w", tns, err)
	}
	d = resp.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
	cache[tns] = d
	return d, nil
}

func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

func keysOf(m map[runKey][]claimcheck.ClaimInfo) []runKey {
	out := make([]runKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// forEach runs fn over items with at most conc at a time.
func forEach[T any](conc int, items []T, fn func(T)) {
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(it)
		})
	}
	wg.Wait()
}

// limiter spaces calls 1/rate apart (a token bucket of one): bounded
// calls per second to Temporal and to claimcheck, whatever the number of
// claims.
type limiter struct {
	mu    sync.Mutex
	every time.Duration
	next  time.Time
}

func newLimiter(perSecond float64) *limiter {
	return &limiter{every: time.Duration(float64(time.Second) / perSecond)}
}

func (l *limiter) wait(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.every)
	l.mu.Unlock()
	return clock.Until(ctx, clock.Real{}, at)
}
