package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/egress"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/service"
)

// DispatchLease names the dispatcher's leases: the shards and members
// (shards.go) are named under it. Alone, it is the lease a replica from
// before the shards delivered for every subscription under.
const DispatchLease = "events-dispatch"

// relist is how often the dispatcher looks whether the subscriptions
// changed (the cursor meta.SubscriptionsChanged, one row) while nothing
// in this process changed them: a change made on another replica is seen
// within it (a new subscription starts at its creation, so it misses
// nothing for it), and the table is read again only then. Between reads,
// rounds go on from the cursors the dispatcher stored itself; reading
// the table every second cost 8% of a core at 10,000 subscriptions.
const relist = time.Second

// relistAnyway is how often the subscriptions are read again even when
// the cursor did not move.
const relistAnyway = time.Minute

// quietLooks bounds the wait between looks for events of a subscription
// whose last looks found none, in poll intervals: with the defaults an
// event after a quiet spell is looked for within 400ms of settling.
const quietLooks = 4

// leaseTTL is how long a dispatcher that stopped renewing keeps its
// shards: a replica killed mid-delivery is replaced after at most this.
const leaseTTL = 10 * time.Second

// SecretOpener returns the signing key of a subscription from its stored
// secret (the engine unseals it with the master key).
type SecretOpener func(s meta.Subscription) ([]byte, error)

// Store is what the dispatcher needs of the metadata store: the
// dispatch leases (shards.go), the subscriptions with their cursors, and the event
// feed they read, the parked events (ADR 0277) and the log of events
// (a dead-lettered subscription says so). Its methods are those of meta.Store, which documents
// them.
type Store interface {
	TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
	Leases(ctx context.Context, prefix string, now time.Time) ([]meta.LeaseHolding, error)
	RequestLeaseRelease(ctx context.Context, name, holder string) error
	Subscriptions(ctx context.Context, tenant string) ([]meta.Subscription, error)
	Cursor(ctx context.Context, name string) (string, error)
	MarkLagging(ctx context.Context, bound time.Time) (int, error)
	FeedEvents(ctx context.Context, tenant string, afterSeq, upTo int64, limit int, labels bool) ([]meta.FeedEvent, error)
	AdvanceSubscription(ctx context.Context, tenant, id string, p meta.SubscriptionProgress) error
	ParkEvents(ctx context.Context, es []meta.ParkedEvent) error
	ParkedEvents(ctx context.Context, tenant, id string, afterSeq int64, limit int) ([]meta.ParkedEvent, error)
	UpdateParked(ctx context.Context, p meta.ParkedEvent) error
	UnparkEvents(ctx context.Context, tenant, id string, seqs []int64) error
	AppendEvents(ctx context.Context, events []meta.Event) error
}

// Dispatcher delivers events to the subscriptions of the shards it
// holds (shards.go).
type Dispatcher struct {
	cfg     Config
	meta    Store
	open    SecretOpener
	clock   clock.Clock
	log     *slog.Logger
	post    *poster
	shards  *shards // this replica's part of the subscriptions
	metrics *metrics
	svc     service.StartStop

	relistNow atomic.Bool // a subscription changed in this process

	mu       sync.Mutex
	subs     map[string]*subState // by subKey: ids are unique per tenant (ADR 0269)
	listed   []listedSub          // as last read
	listedAt time.Time            // when the table was last read, or found unchanged
	readAt   time.Time            // when the table was last read
	version  string               // meta.SubscriptionsChanged as of that read

	laggingAt time.Time // when MarkLagging last ran here

	// quiet is, by tenant, a span of the feed known to hold none of the
	// tenant's events (feedpage.go). Used by the loop only (tick).
	quiet map[string]quietSpan
}

// subState is what the holder keeps of a subscription between rounds.
type subState struct {
	shard    int // shardOf the subscription
	running  bool
	next     time.Time // no attempt before (backoff)
	failures int
	idle     int                // looks in a row that found no event
	quietTil time.Time          // no look before (idle)
	lanes    []*lane            // reused by every round (one round at a time)
	sub      *meta.Subscription // as its last round left it, or as last read

	// parked holds the subscription's waiting parked events by claim
	// lane (laneKey), each lane in seq order (ADR 0277); rows counts
	// the stored parked and dead-lettered ones as far as this holder
	// knows; loaded says parked was read since the state was made or
	// told to read again.
	parked map[string][]meta.ParkedEvent
	rows   int
	loaded bool
}

// lookedQuiet records a look at now that found nothing to send: the
// next is after twice the wait of the last empty look, up to quietLooks
// intervals, so an idle replica does not look ten times a second for
// nothing, and the first event after a quiet spell still waits at most
// that.
func (st *subState) lookedQuiet(now time.Time, interval time.Duration) {
	st.idle = min(st.idle+1, 8)
	st.quietTil = now.Add(min(interval<<(st.idle-1), quietLooks*interval) - interval)
}

// lane is what one lane of a round writes its deliveries with: reused
// buffers, so a delivery allocates next to nothing.
type lane struct {
	idx  []int // the round's events in this lane, in seq order
	held []int // the next request's events (indexes)
	// failed are the claims (laneKey) whose request failed this round:
	// their later events wait.
	failed map[string]bool
	batch  []meta.FeedEvent // one request's events
	sign   *signer          // the round's key
	// batched is the subscription's mode this round: batched
	// (application/cloudevents-batch+json) or structured.
	batched bool
	id      []byte // webhook-id
	body    []byte // CloudEvent(s)
	sig     []byte // webhook-signature
	req     []byte // the whole request
}

// New returns a dispatcher over the metadata store m; Start runs it.
func New(cfg Config, m Store, open SecretOpener, clk clock.Clock, log *slog.Logger, reg prometheus.Registerer) *Dispatcher {
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.Default()
	}
	return &Dispatcher{cfg: cfg, meta: m, open: open, clock: clk, log: log, post: newPoster(cfg.TargetPolicy, cfg.Timeout),
		shards: newShards(m, meta.LeaseHolder(), clk, log), metrics: newMetrics(reg), subs: map[string]*subState{},
		quiet: map[string]quietSpan{}}
}

// SubscriptionsChanged tells the dispatcher that a subscription was
// made, removed or resumed in this process: the next tick reads them
// again instead of waiting for relist.
func (d *Dispatcher) SubscriptionsChanged() { d.relistNow.Store(true) }

// Start runs the dispatcher in the background and returns at once.
func (d *Dispatcher) Start(ctx context.Context) { d.svc.Start(ctx, d.run) }

// Stop ends the dispatcher and waits for its deliveries; idempotent. It
// gives its shards up, so other replicas take over at once.
func (d *Dispatcher) Stop() {
	if d.svc.Stop() {
		d.post.closeIdle()
	}
}

// run ticks every interval (real time: the tests move a fake clock that
// the rounds read, with the loop running) until Stop, then waits for the
// rounds in flight and gives the shards up.
func (d *Dispatcher) run(ctx context.Context) {
	var wg sync.WaitGroup
	_ = service.Every(ctx, service.Config{Name: "dispatch", Interval: d.cfg.Interval, RunAtStart: true},
		func(ctx context.Context) { d.hold(ctx, &wg) })
	wg.Wait()
	d.shards.releaseAll(ctx)
	d.metrics.shards.Set(0)
}

// hold keeps this replica's shards and ticks for them, then gives up the
// drained ones.
func (d *Dispatcher) hold(ctx context.Context, wg *sync.WaitGroup) {
	if taken := d.shards.keep(ctx); len(taken) > 0 {
		// What another replica did in them is in the cursors and the
		// parked events: read them again.
		d.forget(taken)
		d.relistNow.Store(true)
	}
	d.metrics.shards.Set(float64(d.shards.count()))
	if d.shards.held[0] {
		d.markLagging(ctx)
	}
	if d.shards.count() > 0 {
		d.tick(ctx, wg)
	}
	d.shards.releaseDrained(ctx, d.runningIn)
}

// markLagging marks the subscriptions of every shard behind lag_bound,
// from the holder of shard 0 every few seconds; a state it moves moves
// meta.SubscriptionsChanged, so every replica reads them again.
func (d *Dispatcher) markLagging(ctx context.Context) {
	if d.clock.Now().Sub(d.laggingAt) < leaseTTL/3 {
		return
	}
	d.laggingAt = d.clock.Now()
	if n, err := d.meta.MarkLagging(ctx, d.clock.Now().Add(-d.cfg.LagBound)); err == nil {
		d.metrics.lagging.Set(float64(n))
	} else if ctx.Err() == nil {
		d.log.Warn("dispatch: mark lagging subscriptions", "err", err)
	}
}

// subKey names a subscription among every tenant's: its tenant and id.
func subKey(s meta.Subscription) string { return s.Tenant + "\x00" + s.ID }

// listedSub is a subscription as the table was last read, with what
// every tick needs of it worked out once.
type listedSub struct {
	meta.Subscription
	key   string // subKey
	shard int    // shardOf
}

// relistNeeded reports whether the subscriptions must be read again: a
// change in this process, or the cursor meta.SubscriptionsChanged moved
// since the last read (looked at once a relist), or relistAnyway passed.
// version is the cursor as read now, for the read that follows.
func (d *Dispatcher) relistNeeded(ctx context.Context) (fresh bool, version string) {
	now := d.clock.Now()
	forced := d.relistNow.Swap(false)
	if !forced && now.Sub(d.listedAt) < relist {
		return false, ""
	}
	v, err := d.meta.Cursor(ctx, meta.SubscriptionsChanged)
	if err != nil {
		return true, ""
	}
	if !forced && v == d.version && d.listed != nil && now.Sub(d.readAt) < relistAnyway {
		d.listedAt = now
		return false, v
	}
	return true, v
}

// forget drops what this replica kept of the subscriptions of shards
// (none of them is in a round: the shards were not held).
func (d *Dispatcher) forget(shards []int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for key, st := range d.subs {
		if !st.running && slices.Contains(shards, st.shard) {
			delete(d.subs, key)
		}
	}
}

// runningIn reports whether a round of a subscription of shard k runs.
func (d *Dispatcher) runningIn(k int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, st := range d.subs {
		if st.running && st.shard == k {
			return true
		}
	}
	return false
}

// tick starts a round for every subscription that is due and not in a
// round already: a slow receiver holds up only its own subscription.
func (d *Dispatcher) tick(ctx context.Context, wg *sync.WaitGroup) {
	fresh, version := d.relistNeeded(ctx)
	if fresh {
		subs, err := d.meta.Subscriptions(ctx, "")
		if err != nil {
			d.relistNow.Store(true)
			if ctx.Err() == nil {
				d.log.Warn("dispatch: read subscriptions", "err", err)
			}
			return
		}
		d.listed = d.listed[:0]
		for _, s := range subs {
			d.listed = append(d.listed, listedSub{Subscription: s, key: subKey(s), shard: shardOf(s.Tenant, s.ID)})
		}
		d.listedAt, d.readAt, d.version = d.clock.Now(), d.clock.Now(), version
	}
	rounds := d.dueRounds(fresh)
	if len(rounds) == 0 {
		return
	}
	// One read of the feed for every round this tick starts (ADR 0278):
	// each takes its events from the page, not from a read of its own.
	pages := d.readPages(ctx, rounds)
	for _, r := range rounds {
		if d.nothingToSend(r, pages[r.sub.Tenant]) {
			continue
		}
		sub := *r.sub // before the loop can change what it points at
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, page := sub, pages[sub.Tenant]
			// Batch after batch while they come full: the cursor is
			// stored after each, so what a killed holder had in flight
			// is at most one batch. The page serves the first.
			for more := true; more && ctx.Err() == nil; page = nil {
				s, more = d.round(ctx, s, r.st, page)
			}
			d.mu.Lock()
			r.st.running, r.st.sub = false, &s
			d.mu.Unlock()
		}()
	}
}

// nothingToSend reports whether r's page holds everything after its
// cursor and that is nothing, while it has no parked events: then its
// round would only find that out, so it is not started (an idle
// subscription costs no goroutine and no read) and counts as a quiet
// look.
func (d *Dispatcher) nothingToSend(r dueRound, pg *feedPage) bool {
	es, whole := pg.eventsFor(r.sub, d.cfg.Batch)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !whole || len(es) > 0 || !r.st.loaded || r.st.rows > 0 {
		return false
	}
	r.st.lookedQuiet(pg.at, d.cfg.Interval)
	r.st.running = false
	return true
}

// dueRound is a subscription whose round a tick starts, as it stands.
type dueRound struct {
	// sub points at the listing or at the state's copy: both change
	// only in the dispatcher's loop, so a round copies it before it
	// starts.
	sub *meta.Subscription
	st  *subState
}

// dueRounds marks running and returns every subscription of this
// replica's shards that is due and not in a round already, and, after a
// read of the table, forgets the removed ones.
func (d *Dispatcher) dueRounds(fresh bool) []dueRound {
	now := d.clock.Now()
	dead := 0
	var rounds []dueRound
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.listed {
		ls := &d.listed[i]
		if !d.shards.held[ls.shard] {
			continue // another replica's; a state kept of it is forgotten when its shard is taken
		}
		st := d.subs[ls.key]
		if st == nil {
			st = &subState{shard: ls.shard}
			d.subs[ls.key] = st
		}
		s := &ls.Subscription
		switch {
		case st.running:
			// Its round leaves the subscription as it stands after it.
		case fresh || st.sub == nil:
			c := ls.Subscription
			st.sub = &c
			// A subscription known to have parked events has them
			// read again before its next round: a retry (here or on
			// another replica) changed them. One with none has
			// nothing a retry changes.
			if st.rows > 0 {
				st.loaded = false
			}
		default:
			s = st.sub // as its last round left it
		}
		if s.State == meta.SubscriptionDeadLettered {
			dead++
		}
		if !s.Enabled || s.State == meta.SubscriptionDeadLettered || !d.shards.delivers(ls.shard) {
			continue
		}
		if st.running || now.Before(st.next) || now.Before(st.quietTil) {
			continue
		}
		st.running = true
		rounds = append(rounds, dueRound{sub: s, st: st})
	}
	if fresh {
		d.forgetRemoved()
	}
	d.metrics.deadLettered.Set(float64(dead))
	return rounds
}

// forgetRemoved drops the states of subscriptions no longer listed
// (deleted) that are not in a round. d.mu is held.
func (d *Dispatcher) forgetRemoved() {
	live := make(map[string]bool, len(d.listed))
	for i := range d.listed {
		live[d.listed[i].key] = true
	}
	for key, st := range d.subs {
		if !live[key] && !st.running {
			delete(d.subs, key)
		}
	}
}

// A round delivers the subscription's next batch in four stages, each a
// function over the typed result of the one before: plan reads the batch
// and the parked events now due and spreads them over the lanes (a
// roundPlan), deliver sends the lanes (each event's outcome in the
// plan), settle parks what failed and moves the cursor (a settlement),
// and persist stores what changed.
//
// Matching events are spread over Concurrency lanes by claim, each lane
// in seq order. A request that fails stops its claim's later events in
// the round, not the lane's other claims (ADR 0277): the failed event and
// those behind it are parked in their claim's lane, retried on their own
// backoff, and the cursor moves over the whole batch. A claim with parked
// events has its new events parked behind them, so a claim's events
// arrive in order. Only when the receiver took nothing of a batch does
// the cursor stay (the receiver, not a claim, is failing: nothing is
// parked) and the subscription back off as a whole.
//
// round returns the subscription as it now stands, and whether the batch
// was full and the cursor moved, so the next one can follow at once.
func (d *Dispatcher) round(ctx context.Context, s meta.Subscription, st *subState, pg *feedPage) (meta.Subscription, bool) {
	p, ok := d.plan(ctx, s, st, pg)
	if !ok {
		return s, false
	}
	d.deliver(ctx, p)
	set, ok := d.settle(ctx, s, st, p)
	if !ok {
		return s, false // stopping: the next holder goes on from the stored cursor
	}
	return d.persist(ctx, s, st, set)
}

// roundPlan is what a round sends: the batch read at now (events[:batch])
// and the parked events due (events[batch:], parked[i-batch] each), the
// filter, the lanes with their events, and how to send them. err, when
// set, is why nothing can be sent (the secret does not open, the URL is
// refused): the round fails as a delivery would. deliver fills done and
// errs, one per event.
type roundPlan struct {
	now    time.Time
	events []meta.FeedEvent
	batch  int
	parked []meta.ParkedEvent
	behind []int // batch events of claims with parked events: parked behind them
	filter claimcheck.EventFilter
	lanes  []*lane // st.lanes, each with its events (idx)
	key    []byte
	target *target
	per    int // events per request
	err    error
	done   []bool  // delivered
	errs   []error // the request carrying it failed
}

// plan reads the subscription's next batch, settled by now, adds the
// parked events due, and spreads them over the lanes. It reports false
// when there is nothing to send, or the events could not be read.
func (d *Dispatcher) plan(ctx context.Context, s meta.Subscription, st *subState, pg *feedPage) (roundPlan, bool) {
	now := d.clock.Now()
	es, shared := pg.eventsFor(&s, d.cfg.Batch)
	if shared {
		// The look is the page's read: the round is as of its time, so
		// an event settled since is the next look's, and a quiet
		// subscription's wait counts from the read, not from now.
		now = pg.at
	}
	if !d.loadParked(ctx, s, st) {
		return roundPlan{}, false
	}
	if upTo := now.Add(-d.cfg.Settle).UnixNano(); !shared && upTo > s.Cursor {
		var err error
		if es, err = d.meta.FeedEvents(ctx, s.Tenant, s.Cursor, upTo, d.cfg.Batch, len(s.Labels) > 0); err != nil {
			if ctx.Err() == nil {
				d.log.Warn("dispatch: read events", "subscription", s.ID, "err", err)
			}
			return roundPlan{}, false
		}
	}
	due := st.due(now, d.cfg.Batch)
	if len(es) == 0 && len(due) == 0 {
		st.lookedQuiet(now, d.cfg.Interval)
		return roundPlan{}, false
	}
	st.idle, st.quietTil = 0, time.Time{}
	p := roundPlan{now: now, batch: len(es), parked: due,
		filter: claimcheck.EventFilter{Types: s.Types, Namespaces: s.Namespaces, Labels: s.Labels},
		// The subscription's own mode, else the configured default.
		per: cmp.Or(s.EventsPerRequest, d.cfg.EventsPerRequest)}
	p.events = es
	for _, pe := range due {
		p.events = append(p.events, pe.Event)
	}
	p.done, p.errs = make([]bool, len(p.events)), make([]error, len(p.events))
	if len(st.lanes) != d.cfg.Concurrency {
		st.lanes = make([]*lane, d.cfg.Concurrency)
		for i := range st.lanes {
			st.lanes[i] = &lane{failed: map[string]bool{}}
		}
	}
	p.lanes = st.lanes
	for _, ln := range p.lanes {
		ln.idx = ln.idx[:0]
	}
	for i, e := range p.events {
		if i < p.batch {
			if !Match(p.filter, e) {
				continue
			}
			if _, waiting := st.parked[laneKey(e)]; waiting {
				p.behind = append(p.behind, i)
				continue
			}
		}
		ln := p.lanes[laneOf(e, len(p.lanes))]
		ln.idx = append(ln.idx, i)
	}
	d.prepare(s, &p)
	return p, true
}

// prepare opens the subscription's key and reads its URL for the plan;
// when either fails, the plan's err says why.
func (d *Dispatcher) prepare(s meta.Subscription, p *roundPlan) {
	p.key, p.err = d.open(s)
	if p.err != nil {
		d.log.Error("dispatch: the subscription's secret does not open", "subscription", s.ID, "err", p.err)
	}
	t, terr := newTarget(s.URL)
	if p.err == nil && terr != nil {
		p.err = fmt.Errorf("url: %w", terr)
	}
	p.target = t
}

// deliver sends the plan's lanes at once and records each event's
// outcome in p.done and p.errs (disjoint indexes per lane). Nothing is
// sent when the plan has its own error.
func (d *Dispatcher) deliver(ctx context.Context, p roundPlan) {
	if p.err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, ln := range p.lanes {
		if len(ln.idx) == 0 {
			continue
		}
		ln.sign, ln.batched = newSigner(p.key), p.per > 1
		wg.Go(func() { d.deliverLane(ctx, p, ln) })
	}
	wg.Wait()
}

// deliverLane sends a lane's events per events a request, in its order.
// After a request fails, the claims it carried send nothing more this
// round, so nothing of a claim goes ahead of an earlier event of it; the
// lane's other claims go on.
//
// A request of several claims that the receiver answers with a refusal
// is sent again at once one claim a request (sendEach): a receiver that
// refuses one claim's event refuses the whole batch, and only that way
// are the other claims delivered and the one refused parked alone (ADR
// 0277); a receiver refusing all of them refuses each, and the round
// backs off as a whole. Parked events (retries, after the batch's) go in
// requests of one claim each from the start.
func (d *Dispatcher) deliverLane(ctx context.Context, p roundPlan, ln *lane) {
	clear(ln.failed)
	ln.held = ln.held[:0]
	heldClaim := "" // the claim of the held parked events
	flush := func() {
		heldClaim = ""
		if len(ln.held) == 0 {
			return
		}
		err := d.sendHeld(ctx, p, ln, ln.held)
		if errors.Is(err, errRefused) && !oneClaim(p, ln.held) {
			d.sendEach(ctx, p, ln)
		} else {
			d.record(p, ln, ln.held, err)
		}
		ln.held = ln.held[:0]
	}
	for _, i := range ln.idx {
		if ctx.Err() != nil {
			return
		}
		k := laneKey(p.events[i])
		if ln.failed[k] {
			continue
		}
		if i >= p.batch {
			if len(ln.held) > 0 && heldClaim != k {
				flush()
			}
			heldClaim = k
		}
		ln.held = append(ln.held, i)
		if len(ln.held) == p.per {
			flush()
		}
	}
	flush()
}

// sendHeld sends the events at idx in one request.
func (d *Dispatcher) sendHeld(ctx context.Context, p roundPlan, ln *lane, idx []int) error {
	ln.batch = ln.batch[:0]
	for _, i := range idx {
		ln.batch = append(ln.batch, p.events[i])
	}
	return d.send(ctx, p.target, ln)
}

// record notes the outcome of the request that carried the events at idx.
func (d *Dispatcher) record(p roundPlan, ln *lane, idx []int, err error) {
	for _, i := range idx {
		if err == nil {
			p.done[i] = true
		} else {
			p.errs[i] = err
			ln.failed[laneKey(p.events[i])] = true
		}
	}
}

// sendEach sends the held events again one claim a request, in the order
// of each claim's first event.
func (d *Dispatcher) sendEach(ctx context.Context, p roundPlan, ln *lane) {
	held := slices.Clone(ln.held)
	sent := map[string]bool{}
	var one []int
	for _, first := range held {
		k := laneKey(p.events[first])
		if sent[k] {
			continue
		}
		sent[k] = true
		one = one[:0]
		for _, i := range held {
			if laneKey(p.events[i]) == k {
				one = append(one, i)
			}
		}
		if ctx.Err() != nil {
			d.record(p, ln, one, ctx.Err())
			continue
		}
		d.record(p, ln, one, d.sendHeld(ctx, p, ln, one))
	}
}

// oneClaim reports whether the events at idx are all of one claim.
func oneClaim(p roundPlan, idx []int) bool {
	for _, i := range idx[1:] {
		if laneKey(p.events[i]) != laneKey(p.events[idx[0]]) {
			return false
		}
	}
	return true
}

// settlement is what a round leaves to store: the progress, the events
// to park, unpark (delivered) and update (failed again), and whether the
// next batch may follow at once.
type settlement struct {
	progress meta.SubscriptionProgress
	park     []meta.ParkedEvent
	unpark   []int64
	update   []meta.ParkedEvent
	more     bool
}

// settle turns the outcomes into a settlement: delivered parked events
// unparked, failed ones counted (and dead-lettered, ADR 0277), and unless
// the receiver took nothing of the batch, the batch's undelivered events
// parked and the cursor moved past the batch. It reports false when the
// dispatcher is stopping: then nothing is stored.
func (d *Dispatcher) settle(ctx context.Context, s meta.Subscription, st *subState, p roundPlan) (settlement, bool) {
	set := settlement{progress: meta.SubscriptionProgress{Cursor: s.Cursor, From: s.Cursor, State: s.State, Attempts: s.Attempts,
		FailingSince: s.FailingSince, LastError: s.LastError}}
	var firstErr error
	for i := range p.events {
		if p.done[i] {
			set.progress.Delivered++
		} else if firstErr == nil && p.errs[i] != nil {
			firstErr = p.errs[i]
		}
	}
	firstErr = cmp.Or(p.err, firstErr)
	if ctx.Err() != nil {
		// Stopping: what was not sent is neither delivered nor failed,
		// so nothing is settled; the next holder sends the batch again.
		return settlement{}, false
	}
	d.settleParked(&set, p)
	// The receiver took nothing of the batch, or nothing could be sent:
	// hold the cursor and back off (a receiver that is down gets no
	// event parked).
	stuck := firstErr != nil && set.progress.Delivered == 0 && (p.batch > 0 || p.err != nil)
	if !stuck {
		d.parkBatch(&set, st, p)
		if p.batch > 0 {
			set.progress.Cursor = p.events[p.batch-1].Seq
		}
	}
	switch {
	case set.progress.Delivered > 0:
		st.failures = 0
		set.progress.Attempts, set.progress.FailingSince = 0, time.Time{}
	case firstErr != nil:
		d.failed(s, st, &set.progress, firstErr, p.now, stuck)
	}
	set.more = !stuck && p.batch == d.cfg.Batch
	st.apply(set)
	return set, true
}

// failed records a round in which every delivery failed: the attempts
// and since when (both start again after a delivery), the subscription
// dead-lettered once every delivery failed for DeadLetterAfter (ADR
// 0277), and, when the cursor could not move, the backoff before the
// next round.
func (d *Dispatcher) failed(s meta.Subscription, st *subState, pr *meta.SubscriptionProgress, err error, now time.Time, stuck bool) {
	pr.Attempts = s.Attempts + 1
	// The tenant reads last_error: it is told that a name resolved to a
	// refused address, never which one (a window into the operator's
	// DNS); the log below keeps the detail (ADR 0268).
	pr.LastError = egress.Redact(err).Error()
	if pr.FailingSince.IsZero() {
		pr.FailingSince = now
	}
	if now.Sub(pr.FailingSince) >= d.cfg.DeadLetterAfter {
		pr.State = meta.SubscriptionDeadLettered
		d.log.Error("dispatch: subscription dead-lettered: every delivery kept failing",
			"subscription", s.ID, "since", pr.FailingSince, "err", err)
	}
	if !stuck {
		return
	}
	st.failures++
	st.next = now.Add(d.backoff(st.failures))
	d.log.Warn("dispatch: delivery failed; retrying later", "subscription", s.ID, "attempts", pr.Attempts,
		"retry_in", st.next.Sub(now), "err", err)
}

// persist stores the settlement: parked events first (so a cursor is
// never stored past an event that is neither delivered nor parked), then
// the delivered and retried ones, then the progress when it changed the
// cursor, the attempts or the state; it returns the subscription as it
// now stands. The store outlives a stopping dispatcher's context: what
// was delivered is recorded. A failed write makes the holder read the
// parked events again.
func (d *Dispatcher) persist(ctx context.Context, s meta.Subscription, st *subState, set settlement) (meta.Subscription, bool) {
	wctx := context.WithoutCancel(ctx)
	if err := d.storeParking(wctx, s, set); err != nil {
		d.log.Warn("dispatch: record parked events", "subscription", s.ID, "err", err)
		st.loaded = false
		return s, false
	}
	pr := set.progress
	if pr.Cursor == s.Cursor && pr.Attempts == s.Attempts && pr.State == s.State && pr.Delivered == 0 {
		return s, set.more
	}
	if err := d.meta.AdvanceSubscription(wctx, s.Tenant, s.ID, pr); err != nil {
		d.log.Warn("dispatch: record progress", "subscription", s.ID, "err", err)
		return s, false
	}
	if pr.State == meta.SubscriptionDeadLettered && s.State != meta.SubscriptionDeadLettered {
		d.announceDeadLetter(wctx, s, pr)
	}
	s.Cursor, s.State, s.Attempts, s.FailingSince, s.LastError = pr.Cursor, pr.State, pr.Attempts, pr.FailingSince, pr.LastError
	return s, set.more
}

// backoff is the wait after the n-th failure in a row: doubling from
// BackoffMin up to BackoffMax.
func (d *Dispatcher) backoff(n int) time.Duration {
	b := d.cfg.BackoffMin
	for i := 1; i < n && b < d.cfg.BackoffMax; i++ {
		b *= 2
	}
	return min(b, d.cfg.BackoffMax)
}

// laneOf spreads events over n lanes by claim (FNV-1a of its id), so a
// claim's events share a lane; events without a claim by seq.
func laneOf(e meta.FeedEvent, n int) int {
	if e.ClaimID == "" {
		return int(uint64(e.Seq) % uint64(n))
	}
	h := uint32(2166136261)
	for i := 0; i < len(e.ClaimID); i++ {
		h ^= uint32(e.ClaimID[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// send posts the lane's batch in one request: one structured-mode
// CloudEvent, or for a subscription in batched mode a batch (webhook-id: the
// first and last event ids, FIRST-LAST, or the one id of a batch of
// one). Any 2xx is delivered; everything else (3xx included: redirects
// are not followed) is a failure to retry.
func (d *Dispatcher) send(ctx context.Context, t *target, ln *lane) error {
	es := ln.batch
	contentType := ContentType
	ln.id = strconv.AppendInt(ln.id[:0], es[0].Seq, 10)
	if ln.batched {
		contentType, ln.body = BatchContentType, appendBatch(ln.body[:0], es)
		if len(es) > 1 {
			ln.id = strconv.AppendInt(append(ln.id, '-'), es[len(es)-1].Seq, 10)
		}
	} else {
		ln.body = appendCloudEvent(ln.body[:0], es[0])
	}
	now := d.clock.Now().Unix()
	ln.sig = ln.sign.append(ln.sig[:0], ln.id, now, ln.body)
	ln.req = t.request(ln.req, contentType, ln.id, now, ln.sig, ln.body)
	a, err := d.post.post(ctx, t, ln.req)
	if err != nil {
		d.metrics.errored.Inc()
		return fmt.Errorf("event %s: %w", ln.id, err)
	}
	if a.code < 200 || a.code > 299 {
		d.metrics.refused.Inc()
		return fmt.Errorf("event %s: %w: the receiver answered %s", ln.id, errRefused, a.status)
	}
	done := d.clock.Now()
	d.metrics.ok.Add(float64(len(es)))
	for _, e := range es {
		d.metrics.lag.Observe(done.Sub(e.At).Seconds())
	}
	return nil
}

var errRefused = errors.New("not delivered")
