package sweep

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The sweeper paces itself (ADR 0260): nobody has to tune it for the
// backlog or the traffic it finds.
//
//   - The pace is a number of items per second per replica. A tick's run
//     does up to pace × interval items; pages are spread over the tick so
//     requests meet short pages, not a burst.
//   - The backlog raises it: a run that spent its whole budget while due
//     work remained multiplies the pace by paceGrowth (twice that past
//     max_lag). A run that cannot spend its budget within the tick's
//     runtime sets it to what it achieved, so the pace never runs away
//     from what the machine does.
//   - The request latency it causes lowers it: the engine times the
//     metadata round trip of every claim operation (Begin, Done), and the
//     requests that overlapped one of the sweeper's pages are compared
//     with those that did not. When the overlapped ones are slower by more
//     than latencyTolerance, the pace is halved, and pages under traffic
//     are sized to last a fraction (1/pageShare) of a quiet request.
//   - The lag bound wins over latency: past max_lag the pace is never
//     lowered, so due work stays bounded while the machine has capacity.
//   - Operator settings are limits on top: max_ops_per_run caps a tick's
//     items, max_runtime_per_run its duration, op_delay is the least pause
//     between pages, and lag_budget (when set) restores the fixed budget
//     under traffic. Unset, none of them holds the sweeper back.
const (
	// minPace is the pace a sweeper starts at and backs off to at most:
	// the items per second a running server did under traffic before it
	// paced itself (lag_budget 100 per 1s tick).
	minPace = 100.0
	// paceGrowth multiplies the pace after a run that spent its budget
	// with due work left.
	paceGrowth = 1.5
	// paceBackoff divides it under latency pressure.
	paceBackoff = 2.0
	// latencyTolerance is how much slower (as a fraction) the requests
	// that overlapped a page may be than those that did not before the
	// pace is lowered.
	latencyTolerance = 0.2
	// minSamples is how many overlapped requests a latency verdict needs;
	// fewer (light traffic) accumulate over ticks, up to maxWindow ticks.
	minSamples = 16
	maxWindow  = 10
	// pageShare: under traffic a page lasts at most a quiet request's
	// latency divided by this, so a request that waits for one is
	// delayed by a fraction of its own duration.
	pageShare = 4
	// minTrafficPage and startTrafficPage bound the page under traffic
	// (startTrafficPage until both latencies are known).
	minTrafficPage   = 4
	startTrafficPage = 32
	// trafficDuty is the share of a tick a run may spend in pages when
	// operations arrived since the last run: some requests always see no
	// page, which keeps the quiet latency known.
	trafficDuty = 0.5
)

// limits are the pacing settings the operator set (zero: not set). The
// defaulted Config still bounds the backstop and the scrub as before.
type limits struct {
	opDelay    time.Duration // least pause between pages
	maxOps     int           // most items of one tick's run
	maxRuntime time.Duration // longest run
	lagBudget  int           // when set: the fixed budget under traffic, past max_lag only
}

func limitsOf(c Config) limits {
	return limits{opDelay: c.OpDelay, maxOps: c.MaxOpsPerRun, maxRuntime: c.MaxRuntimePerRun, lagBudget: c.LagBudget}
}

// Op is an operation's metadata round trip being timed: Begin returns
// it, Done ends it. It is a small value, so timing allocates nothing.
type Op struct {
	start time.Time
	seq   uint64
}

// Begin records an operation like Touch and starts timing its metadata
// round trip; the caller passes the result to Done when the round trip
// is over. The engine calls them on the path every claim operation
// takes.
func (s *Sweeper) Begin() Op {
	s.Touch()
	return Op{start: time.Now(), seq: s.pageSeq.Load()}
}

// Done ends the timing Begin started: the duration counts as overlapped
// when a page of this sweeper was in flight at any time during it.
func (s *Sweeper) Done(op Op) {
	s.observe(time.Since(op.start), op.seq&1 == 1 || s.pageSeq.Load() != op.seq)
}

func (s *Sweeper) observe(d time.Duration, overlapped bool) {
	w := &s.latency.quiet
	if overlapped {
		w = &s.latency.overlapped
	}
	w.n.Add(1)
	w.ns.Add(int64(d))
}

// latencySums are the request latencies since the pacer last read them,
// added to by every request without a lock.
type latencySums struct{ quiet, overlapped sum }

type sum struct{ n, ns atomic.Int64 }

func (s *sum) take() (n, ns int64) { return s.n.Swap(0), s.ns.Swap(0) }

// pacer is the pace and what it is derived from. One tick uses it at a
// time (mu).
type pacer struct {
	mu       sync.Mutex
	pace     float64       // items per second
	baseline time.Duration // mean latency of requests that overlapped no page (0: not known)
	perItem  time.Duration // mean duration of a page, per item (0: not known)
	lastRun  time.Time     // when the last paced run began
	// The latency window being gathered.
	quietN, quietNs, overN, overNs int64
	window                         int
}

// verdict reads the latencies gathered since the last call and reports
// whether the overlapped requests were slower than the quiet ones by
// more than latencyTolerance. It decides only with minSamples overlapped
// requests (a window spans up to maxWindow ticks); the quiet mean becomes
// the baseline it compares against.
func (p *pacer) verdict(l *latencySums) (pressure bool) {
	qn, qns := l.quiet.take()
	on, ons := l.overlapped.take()
	p.quietN, p.quietNs, p.overN, p.overNs = p.quietN+qn, p.quietNs+qns, p.overN+on, p.overNs+ons
	p.window++
	if p.quietN >= minSamples {
		mean := time.Duration(p.quietNs / p.quietN)
		if p.baseline == 0 {
			p.baseline = mean
		} else {
			p.baseline = (3*p.baseline + mean) / 4
		}
	}
	if p.overN >= minSamples && p.baseline > 0 {
		mean := time.Duration(p.overNs / p.overN)
		pressure = float64(mean) > float64(p.baseline)*(1+latencyTolerance)
	}
	if p.overN >= minSamples || p.quietN >= minSamples || p.window >= maxWindow {
		p.quietN, p.quietNs, p.overN, p.overNs, p.window = 0, 0, 0, 0, 0
	}
	return pressure
}

// trafficPage is the page size under traffic: a page lasts about a quiet
// request's latency divided by pageShare.
func (p *pacer) trafficPage(pageSize int) int {
	if p.baseline <= 0 || p.perItem <= 0 {
		return min(pageSize, startTrafficPage)
	}
	n := int(p.baseline / (pageShare * p.perItem))
	return max(min(n, pageSize), min(minTrafficPage, pageSize))
}

// notePage folds a page's duration into the per-item mean.
func (p *pacer) notePage(items int, d time.Duration) {
	if items <= 0 {
		return
	}
	per := d / time.Duration(items)
	if p.perItem == 0 {
		p.perItem = per
	} else {
		p.perItem = (3*p.perItem + per) / 4
	}
}

// runOutcome is how a paced run ended.
type runOutcome struct {
	ops      int
	elapsed  time.Duration // real time the run took
	budget   bool          // it spent its budget with due work left
	runtime  bool          // it ran out of time with budget and due work left
	pressure bool          // latency pressure lowered the pace for this run
	pastLag  bool          // the oldest due item was older than max_lag
}

// adjust sets the next pace from the run's outcome, within [floor, ceil]
// (ceil 0: none). Latency pressure never counts past max_lag (the caller
// leaves it unset there).
func (p *pacer) adjust(o runOutcome, floor, ceil float64) {
	switch {
	case o.pressure:
		// Lowered before the run already; no growth on top.
	case o.runtime:
		// The machine did less than the pace in the time it had: the
		// pace follows what it does (pages back to back).
		if o.elapsed > 0 {
			p.pace = min(p.pace, float64(o.ops)/o.elapsed.Seconds())
		}
	case o.budget:
		g := paceGrowth
		if o.pastLag {
			g *= 2
		}
		p.pace *= g
	}
	p.pace = max(p.pace, floor)
	if ceil > 0 {
		p.pace = min(p.pace, ceil)
	}
}

// Pace returns the current pace of the background sweeper in items per
// second (the claimcheck_sweeper_pace_items_per_second gauge).
func (s *Sweeper) Pace() float64 {
	s.pacer.mu.Lock()
	defer s.pacer.mu.Unlock()
	return s.pacer.pace
}

// paceCeil is the pace max_ops_per_run allows (0: no limit).
func (s *Sweeper) paceCeil() float64 {
	if s.limits.maxOps <= 0 {
		return 0
	}
	return float64(s.limits.maxOps) / s.cfg.Interval.Seconds()
}

// paced does one tick's run at the pace: under traffic with pages sized
// and spread over the tick for the request latency, in maintenance
// (idle, the lease held) with pages back to back and aborted when traffic
// resumes. It then adjusts the pace.
func (s *Sweeper) paced(ctx context.Context, pastLag, maintenance bool) (Result, error) {
	p := &s.pacer
	p.mu.Lock()
	defer p.mu.Unlock()
	pressure := p.verdict(&s.latency) && !pastLag && !maintenance
	if pressure {
		// Lower the pace before this run, not after it: the pages it
		// would do at the old pace are what caused the pressure.
		p.pace = max(minPace, p.pace/paceBackoff)
	}
	// b bounds the run: its span (pages and the pauses between them)
	// and its busy time (pages only).
	b := bounds{span: s.cfg.Interval, page: s.cfg.PageSize, opDelay: s.limits.opDelay, paced: true}
	if s.limits.maxRuntime > 0 {
		b.span = s.limits.maxRuntime
	}
	b.busy = b.span
	now := s.clock.Now()
	// No operation since the last run began: no request to leave time
	// for, so this run may be busy for its whole span.
	traffic := !s.idleSince().Before(p.lastRun)
	p.lastRun = now
	if !maintenance {
		b.budget = max(1, int(p.pace*s.cfg.Interval.Seconds()))
		b.spread = p.pace
		if traffic {
			b.busy = time.Duration(float64(b.span) * trafficDuty)
			b.page = p.trafficPage(s.cfg.PageSize)
		}
	}
	if s.limits.maxOps > 0 && (b.budget == 0 || b.budget > s.limits.maxOps) {
		b.budget = s.limits.maxOps
	}
	res, end, err := s.pages(ctx, b, maintenance)
	o := runOutcome{ops: res.Ops(), elapsed: s.clock.Now().Sub(now), pressure: pressure, pastLag: pastLag,
		budget: end == endBudget, runtime: end == endRuntime}
	if maintenance {
		// The run went as fast as the machine goes: that is the pace.
		if o.elapsed > 0 && end == endRuntime {
			p.pace = max(minPace, float64(o.ops)/o.elapsed.Seconds())
		}
		if c := s.paceCeil(); c > 0 {
			p.pace = min(p.pace, c)
		}
	} else {
		p.adjust(o, minPace, s.paceCeil())
	}
	s.metrics.Pace.Set(p.pace)
	return res, err
}

// bounds bound one run of pages.
type bounds struct {
	budget  int           // items (0: none)
	page    int           // items per page
	spread  float64       // items per second the pages are spread at (0: back to back)
	span    time.Duration // longest run, pauses included
	busy    time.Duration // longest time spent in pages
	opDelay time.Duration // least pause between pages
	// paced: a paced run, whose pages teach the pacer their cost per
	// item (the caller holds the pacer's lock).
	paced bool
}

// unbounded is a span or busy time no run reaches.
const unbounded = time.Duration(1<<63 - 1)

// runEnd is why a run of pages stopped.
type runEnd int

const (
	endDry     runEnd = iota // nothing more was due
	endBudget                // the item budget was spent
	endRuntime               // the time in pages was over: the machine does no more
	endSpan                  // the run's span was over
	endAborted               // traffic resumed during a maintenance run
	endError
)

// pages does pages of due work (claims, then blobs) of up to b.page items
// each until the budget, the runtime or the due work runs out. With
// b.spread, each page's items take 1/spread seconds from its start to the
// next page's; b.opDelay (op_delay, when set) is the least pause between
// pages.
// Durations read the injected clock; the pauses wait on the schedule's
// clock (Sweeper.wait: real time). A maintenance run without op_delay keeps PageWorkers pages in flight
// (concurrentPages).
func (s *Sweeper) pages(ctx context.Context, b bounds, maintenance bool) (res Result, end runEnd, err error) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	ctx, span := s.tracer.Start(ctx, spanRun)
	defer func() { endRun(span, res, err) }()
	ctx = s.sweeperActor(ctx)
	start := s.clock.Now()
	startIdle := s.idleSince()
	defer func() {
		s.metrics.RunDuration.Observe(s.clock.Now().Sub(start).Seconds())
		if res.Aborted {
			s.metrics.Aborts.Inc()
		}
	}()
	// A page is up to b.page claims, then up to b.page blobs, within
	// the budget.
	limit := func() int {
		if b.budget > 0 {
			return min(b.page, b.budget-res.Ops())
		}
		return b.page
	}
	if maintenance && b.opDelay == 0 && s.cfg.PageWorkers > 1 {
		res, end, err = s.concurrentPages(ctx, b, start, startIdle)
		return res, end, err
	}
	var busy time.Duration
	for {
		switch {
		case ctx.Err() != nil:
			return res, endError, ctx.Err()
		case b.budget > 0 && res.Ops() >= b.budget:
			return res, endBudget, nil
		case busy >= b.busy:
			return res, endRuntime, nil
		case s.clock.Now().Sub(start) >= b.span:
			return res, endSpan, nil
		case maintenance && !s.idleSince().Equal(startIdle):
			res.Aborted = true
			return res, endAborted, nil
		}
		began := s.clock.Now()
		before := res.Ops()
		s.pageBegins()
		n, err := s.finishClaims(ctx, limit(), &res)
		m := 0
		if err == nil {
			if r := limit(); r > 0 {
				m, err = s.collectBlobs(ctx, r, &res)
			}
		}
		s.pageEnds()
		took := s.clock.Now().Sub(began)
		busy += took
		if b.paced {
			s.pacer.notePage(res.Ops()-before, took)
		}
		switch {
		case err != nil:
			return res, endError, err
		case n == 0 && m == 0:
			return res, endDry, nil
		case b.budget > 0 && res.Ops() >= b.budget:
			return res, endBudget, nil // no pause after the last page
		}
		wait := b.opDelay
		if b.spread > 0 {
			wait = max(wait, time.Duration(float64(res.Ops()-before)/b.spread*float64(time.Second))-took)
		}
		if wait > 0 {
			if err := s.sleep(ctx, wait); err != nil {
				return res, endError, err
			}
		}
	}
}

// pageBegins and pageEnds bracket a page: pageSeq is odd while any page
// is in flight (Done counts the requests that overlapped one).
func (s *Sweeper) pageBegins() {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	if s.inFlight == 0 {
		s.pageSeq.Add(1)
	}
	s.inFlight++
}

func (s *Sweeper) pageEnds() {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	s.inFlight--
	if s.inFlight == 0 {
		s.pageSeq.Add(1)
	}
}

// concurrentPages is pages for a maintenance run with PageWorkers pages
// in flight: each worker does pages back to back (claims, then blobs) as
// pages does, and they share the run. What they share is under one
// mutex, which keeps the counts exact: a worker reserves its page's items
// from the budget before the page (so the workers never overspend it)
// and adds what the page did to res after it. The metadata store's
// compare-and-swap steps and skipped locks keep two pages from doing an
// item twice. The run ends at the first end condition a worker meets
// (budget, runtime, span, traffic, an error), after the pages in flight;
// it is dry when every worker found nothing due. notePage runs under the
// mutex too: the caller holds the pacer's lock for the whole run and
// waits for the workers, so they are the only ones to touch the pacer.
func (s *Sweeper) concurrentPages(ctx context.Context, b bounds, start, startIdle time.Time) (Result, runEnd, error) {
	var (
		mu       sync.Mutex
		res      Result
		reserved int    // items of pages in flight not yet in res
		end      runEnd = endDry
		stopped  bool
		firstErr error
	)
	// stop records the run's end; the first one wins. mu held.
	stop := func(e runEnd, err error) {
		if !stopped {
			stopped, end, firstErr = true, e, err
		}
	}
	// next decides, before a page, whether the run goes on and how many
	// items the page may do. mu held.
	next := func(busy time.Duration) int {
		switch {
		case stopped:
			return 0
		case ctx.Err() != nil:
			stop(endError, ctx.Err())
		case b.budget > 0 && res.Ops() >= b.budget:
			stop(endBudget, nil)
		case busy >= b.busy:
			stop(endRuntime, nil)
		case s.clock.Now().Sub(start) >= b.span:
			stop(endSpan, nil)
		case !s.idleSince().Equal(startIdle):
			res.Aborted = true
			stop(endAborted, nil)
		}
		if stopped {
			return 0
		}
		limit := b.page
		if b.budget > 0 {
			// The rest of the budget is in flight: this worker is done,
			// the others end the run.
			limit = min(limit, b.budget-res.Ops()-reserved)
		}
		return limit
	}
	worker := func() {
		var busy time.Duration // this worker's time in pages
		for {
			mu.Lock()
			limit := next(busy)
			if limit <= 0 {
				mu.Unlock()
				return
			}
			reserved += limit
			mu.Unlock()

			var page Result
			began := s.clock.Now()
			s.pageBegins()
			n, err := s.finishClaims(ctx, limit, &page)
			m := 0
			if r := blobLimit(b, limit, page.Ops()); err == nil && r > 0 {
				m, err = s.collectBlobs(ctx, r, &page)
			}
			s.pageEnds()
			took := s.clock.Now().Sub(began)
			busy += took

			mu.Lock()
			reserved -= limit
			res.ClaimsFinished += page.ClaimsFinished
			res.BlobsCollected += page.BlobsCollected
			res.DeleteFailures += page.DeleteFailures
			if b.paced {
				s.pacer.notePage(page.Ops(), took)
			}
			dry := n == 0 && m == 0
			if err != nil {
				stop(endError, err)
			}
			mu.Unlock()
			if err != nil || dry {
				return // dry: the others finish what they found
			}
		}
	}
	var wg sync.WaitGroup
	for range s.cfg.PageWorkers {
		wg.Go(worker)
	}
	wg.Wait()
	if !stopped && b.budget > 0 && res.Ops() >= b.budget {
		end = endBudget
	}
	return res, end, firstErr
}

// blobLimit is how many blobs a page may collect after it finished
// claims claims: as in pages, a page size of each without a budget, the rest of
// the page's reservation within one.
func blobLimit(b bounds, limit, claims int) int {
	if b.budget > 0 {
		return limit - claims
	}
	return b.page
}
