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

// DispatchLease is the lease the delivering replica holds.
const DispatchLease = "events-dispatch"

// relist is how often the holder reads the subscriptions again while
// nothing in this process changed them: a change made on another replica
// is seen within it (a new subscription starts at its creation, so it
// misses nothing for it). Between reads, rounds go on from the cursors
// the holder stored itself; every tick reading the table cost each
// replica a read transaction ten times a second.
const relist = time.Second

// quietLooks bounds the wait between looks for events of a subscription
// whose last looks found none, in poll intervals: with the defaults an
// event after a quiet spell is looked for within 400ms of settling.
const quietLooks = 4

// leaseTTL is how long a dispatcher that stopped renewing keeps the
// lease: a replica killed mid-delivery is replaced after at most this.
const leaseTTL = 10 * time.Second

// SecretOpener returns the signing key of a subscription from its stored
// secret (the engine unseals it with the master key).
type SecretOpener func(s meta.Subscription) ([]byte, error)

// Store is what the dispatcher needs of the metadata store: the
// DispatchLease, the subscriptions with their cursors, and the event
// feed they read. Its methods are those of meta.Store, which documents
// them.
type Store interface {
	TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
	Subscriptions(ctx context.Context, tenant string) ([]meta.Subscription, error)
	MarkLagging(ctx context.Context, bound time.Time) (int, error)
	FeedEvents(ctx context.Context, tenant string, afterSeq, upTo int64, limit int, labels bool) ([]meta.FeedEvent, error)
	AdvanceSubscription(ctx context.Context, tenant, id string, p meta.SubscriptionProgress) error
}

// Dispatcher delivers events to subscriptions while it holds the
// DispatchLease.
type Dispatcher struct {
	cfg     Config
	meta    Store
	open    SecretOpener
	clock   clock.Clock
	log     *slog.Logger
	post    *poster
	lease   *service.Lease // DispatchLease, kept across ticks
	metrics *metrics
	svc     service.StartStop

	relistNow atomic.Bool // a subscription changed in this process

	mu       sync.Mutex
	subs     map[string]*subState // by subKey: ids are unique per tenant (ADR 0269)
	listed   []meta.Subscription  // as last read
	listedAt time.Time
}

// subState is what the holder keeps of a subscription between rounds.
type subState struct {
	running  bool
	next     time.Time      // no attempt before (backoff)
	sent     map[int64]bool // delivered above the stored cursor (another claim's event failed first)
	failures int
	idle     int                // looks in a row that found no event
	quietTil time.Time          // no look before (idle)
	lanes    []*lane            // reused by every round (one round at a time)
	sub      *meta.Subscription // as its last round left it, or as last read
}

// lane is what one lane of a round writes its deliveries with: reused
// buffers, so a delivery allocates next to nothing.
type lane struct {
	idx   []int            // the round's events in this lane, in seq order
	batch []meta.FeedEvent // one request's events
	sign  *signer          // the round's key
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
	// The lease is renewed at a third of its TTL: a write every few
	// seconds, not every tick.
	lease := service.NewLease(m, service.LeaseConfig{Name: DispatchLease, Holder: meta.LeaseHolder(), TTL: leaseTTL,
		RenewAfter: leaseTTL / 3, Clock: clk, Logger: log})
	return &Dispatcher{cfg: cfg, meta: m, open: open, clock: clk, log: log, post: newPoster(cfg.TargetPolicy, cfg.Timeout),
		lease: lease, metrics: newMetrics(reg), subs: map[string]*subState{}}
}

// SubscriptionsChanged tells the dispatcher that a subscription was
// made, removed or resumed in this process: the next tick reads them
// again instead of waiting for relist.
func (d *Dispatcher) SubscriptionsChanged() { d.relistNow.Store(true) }

// Start runs the dispatcher in the background and returns at once.
func (d *Dispatcher) Start(ctx context.Context) { d.svc.Start(ctx, d.run) }

// Stop ends the dispatcher and waits for its deliveries; idempotent. It
// gives the lease up, so another replica takes over at once.
func (d *Dispatcher) Stop() {
	if d.svc.Stop() {
		d.post.closeIdle()
	}
}

// run ticks every interval (real time: the tests move a fake clock that
// the rounds read, with the loop running) until Stop, then waits for the
// rounds in flight and gives the lease up.
func (d *Dispatcher) run(ctx context.Context) {
	var wg sync.WaitGroup
	_ = service.Every(ctx, service.Config{Name: "dispatch", Interval: d.cfg.Interval, RunAtStart: true},
		func(ctx context.Context) { d.hold(ctx, &wg) })
	wg.Wait()
	if d.lease.Held() {
		d.lease.Release(ctx)
	}
}

// hold keeps the lease and, while it is held, ticks.
func (d *Dispatcher) hold(ctx context.Context, wg *sync.WaitGroup) {
	term, err := d.lease.Keep(ctx)
	if err != nil && ctx.Err() == nil {
		d.log.Warn("dispatch: lease", "err", err)
	}
	if term.Began {
		d.forget() // a new term: what another holder sent is in the cursors
	}
	if term.Tried {
		// Read again after a new term (another holder moved the
		// cursors) and after MarkLagging (it moves states).
		d.relistNow.Store(true)
		if term.Held {
			if n, err := d.meta.MarkLagging(ctx, d.clock.Now().Add(-d.cfg.LagBound)); err == nil {
				d.metrics.lagging.Set(float64(n))
			} else if ctx.Err() == nil {
				d.log.Warn("dispatch: mark lagging subscriptions", "err", err)
			}
		}
	}
	if term.Held {
		d.tick(ctx, wg)
	}
}

// subKey names a subscription among every tenant's: its tenant and id.
func subKey(s meta.Subscription) string { return s.Tenant + "\x00" + s.ID }

func (d *Dispatcher) forget() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, st := range d.subs {
		if !st.running {
			delete(d.subs, id)
		}
	}
}

// tick starts a round for every subscription that is due and not in a
// round already: a slow receiver holds up only its own subscription.
func (d *Dispatcher) tick(ctx context.Context, wg *sync.WaitGroup) {
	fresh := d.relistNow.Swap(false) || d.clock.Now().Sub(d.listedAt) >= relist
	if fresh {
		subs, err := d.meta.Subscriptions(ctx, "")
		if err != nil {
			d.relistNow.Store(true)
			if ctx.Err() == nil {
				d.log.Warn("dispatch: read subscriptions", "err", err)
			}
			return
		}
		d.listed, d.listedAt = subs, d.clock.Now()
	}
	now := d.clock.Now()
	dead := 0
	d.mu.Lock()
	defer d.mu.Unlock()
	live := map[string]bool{}
	for _, s := range d.listed {
		k := subKey(s)
		live[k] = true
		st := d.subs[k]
		if st == nil {
			st = &subState{sent: map[int64]bool{}}
			d.subs[k] = st
		}
		switch {
		case st.running:
			// Its round leaves the subscription as it stands after it.
		case fresh || st.sub == nil:
			c := s
			st.sub = &c
		default:
			s = *st.sub // as its last round left it
		}
		if s.State == meta.SubscriptionDeadLettered {
			dead++
		}
		if !s.Enabled || s.State == meta.SubscriptionDeadLettered {
			continue
		}
		if st.running || now.Before(st.next) || now.Before(st.quietTil) {
			continue
		}
		st.running = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Batch after batch while they come full: the cursor is
			// stored after each, so what a killed holder had in flight
			// is at most one batch.
			for more := true; more && ctx.Err() == nil; {
				s, more = d.round(ctx, s, st)
			}
			d.mu.Lock()
			st.running, st.sub = false, &s
			d.mu.Unlock()
		}()
	}
	for id, st := range d.subs {
		if !live[id] && !st.running {
			delete(d.subs, id)
		}
	}
	d.metrics.deadLettered.Set(float64(dead))
}

// A round delivers the subscription's next batch in four stages, each a
// function over the typed result of the one before: plan reads the batch
// and spreads it over the lanes (a roundPlan), deliver sends the lanes
// (the first failure), settle moves the cursor and counts failures (a
// settlement), and persist stores what changed.
//
// Matching events are spread over Concurrency lanes by claim, each lane
// in seq order and stopping at its first failure, so a claim's events
// arrive in order and one failing receiver call holds back only its
// lane's later events. The cursor then moves over the prefix of the batch
// that was delivered or filtered out; events delivered past a failure are
// remembered (sent) and not sent again by this holder.
//
// round returns the subscription as it now stands, and whether the batch
// was full and delivered, so the next one can follow at once.
func (d *Dispatcher) round(ctx context.Context, s meta.Subscription, st *subState) (meta.Subscription, bool) {
	p, ok := d.plan(ctx, s, st)
	if !ok {
		return s, false
	}
	err := d.deliver(ctx, p, st)
	set, ok := d.settle(ctx, s, st, p, err)
	if !ok {
		return s, false // stopping: the next holder goes on from the stored cursor
	}
	return d.persist(ctx, s, set)
}

// roundPlan is what a round sends: the batch read at now, the filter, the
// lanes with their events, and how to send them. err, when set, is why
// nothing can be sent (the secret does not open, the URL is refused): the
// round fails as a delivery would.
type roundPlan struct {
	now    time.Time
	events []meta.FeedEvent
	filter claimcheck.EventFilter
	lanes  []*lane // st.lanes, each with its events (idx)
	key    []byte
	target *target
	per    int // events per request
	err    error
}

// plan reads the subscription's next batch, settled by now, and spreads
// it over the lanes. It reports false when there is nothing to send: no
// settled event past the cursor, or the events table could not be read.
func (d *Dispatcher) plan(ctx context.Context, s meta.Subscription, st *subState) (roundPlan, bool) {
	now := d.clock.Now()
	upTo := now.Add(-d.cfg.Settle).UnixNano()
	if upTo <= s.Cursor {
		return roundPlan{}, false
	}
	es, err := d.meta.FeedEvents(ctx, s.Tenant, s.Cursor, upTo, d.cfg.Batch, len(s.Labels) > 0)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("dispatch: read events", "subscription", s.ID, "err", err)
		}
		return roundPlan{}, false
	}
	if len(es) == 0 {
		// Nothing new: look again after twice the wait of the last
		// empty look, up to quietLooks intervals, so an idle replica
		// does not read the table ten times a second for nothing, and
		// the first event after a quiet spell still waits at most that.
		st.idle = min(st.idle+1, 8)
		st.quietTil = now.Add(min(d.cfg.Interval<<(st.idle-1), quietLooks*d.cfg.Interval) - d.cfg.Interval)
		return roundPlan{}, false
	}
	st.idle, st.quietTil = 0, time.Time{}
	p := roundPlan{now: now, events: es, filter: claimcheck.EventFilter{Types: s.Types, Namespaces: s.Namespaces, Labels: s.Labels},
		// The subscription's own mode, else the configured default.
		per: cmp.Or(s.EventsPerRequest, d.cfg.EventsPerRequest)}
	if len(st.lanes) != d.cfg.Concurrency {
		st.lanes = make([]*lane, d.cfg.Concurrency)
		for i := range st.lanes {
			st.lanes[i] = &lane{}
		}
	}
	p.lanes = st.lanes
	for _, ln := range p.lanes {
		ln.idx = ln.idx[:0]
	}
	for i, e := range es {
		if !Match(p.filter, e) || st.sent[e.Seq] {
			continue
		}
		ln := p.lanes[laneOf(e, len(p.lanes))]
		ln.idx = append(ln.idx, i)
	}
	p.key, p.err = d.open(s)
	if p.err != nil {
		d.log.Error("dispatch: the subscription's secret does not open", "subscription", s.ID, "err", p.err)
	}
	t, terr := newTarget(s.URL)
	if p.err == nil && terr != nil {
		p.err = fmt.Errorf("url: %w", terr)
	}
	p.target = t
	return p, true
}

// deliver sends the plan's lanes at once, each per events a request in
// its order, records what arrived in st.sent, and returns the first
// failure (the plan's own error, when it has one, and nothing is sent).
func (d *Dispatcher) deliver(ctx context.Context, p roundPlan, st *subState) error {
	if p.err != nil {
		return p.err
	}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, ln := range p.lanes {
		if len(ln.idx) == 0 {
			continue
		}
		ln.sign, ln.batched = newSigner(p.key), p.per > 1
		wg.Go(func() {
			// per events at a time, in the lane's order: a request
			// that fails stops the lane, so nothing of a claim goes
			// ahead of an earlier event of it.
			for part := range slices.Chunk(ln.idx, p.per) {
				ln.batch = ln.batch[:0]
				for _, i := range part {
					ln.batch = append(ln.batch, p.events[i])
				}
				err := d.send(ctx, p.target, ln)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				for _, e := range ln.batch {
					st.sent[e.Seq] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// settlement is what a round leaves to store: the progress, and whether
// the next batch may follow at once.
type settlement struct {
	progress meta.SubscriptionProgress
	more     bool
}

// settle moves the cursor over the prefix of the batch that was
// delivered or filtered out, counts the deliveries it passes, and on a
// failure counts the attempt, backs off and dead-letters. It reports
// false when the round failed because the dispatcher is stopping: then
// nothing is stored.
func (d *Dispatcher) settle(ctx context.Context, s meta.Subscription, st *subState, p roundPlan, err error) (settlement, bool) {
	pr := meta.SubscriptionProgress{Cursor: s.Cursor, State: s.State}
	for _, e := range p.events {
		if Match(p.filter, e) && !st.sent[e.Seq] {
			break
		}
		pr.Cursor = e.Seq
	}
	// Counted once, when the cursor passes them; sent above the cursor
	// stay remembered until it does.
	for seq := range st.sent {
		if seq <= pr.Cursor {
			pr.Delivered++
			delete(st.sent, seq)
		}
	}
	if err != nil && ctx.Err() != nil {
		return settlement{}, false
	}
	if err != nil {
		d.failed(s, st, &pr, err, p.now)
	} else {
		st.failures = 0
	}
	return settlement{progress: pr, more: err == nil && len(p.events) == d.cfg.Batch}, true
}

// failed records a failed round in pr and st: the attempts at the event
// at the head of the line and since when it fails (both start again when
// the cursor moved), the dead letter once it failed for
// DeadLetterAfter, and the backoff before the next round.
func (d *Dispatcher) failed(s meta.Subscription, st *subState, pr *meta.SubscriptionProgress, err error, now time.Time) {
	st.failures++
	pr.Attempts = s.Attempts + 1
	// The tenant reads last_error: it is told that a name resolved to a
	// refused address, never which one (a window into the operator's
	// DNS); the log below keeps the detail (ADR 0268).
	pr.LastError = egress.Redact(err).Error()
	pr.FailingSince = s.FailingSince
	if pr.Cursor > s.Cursor || pr.FailingSince.IsZero() {
		pr.FailingSince = now // a new event at the head of the line
		if pr.Cursor > s.Cursor {
			pr.Attempts = 1
		}
	}
	if now.Sub(pr.FailingSince) >= d.cfg.DeadLetterAfter {
		pr.State = meta.SubscriptionDeadLettered
		d.log.Error("dispatch: subscription dead-lettered: its oldest undelivered event kept failing",
			"subscription", s.ID, "since", pr.FailingSince, "err", err)
	}
	st.next = now.Add(d.backoff(st.failures))
	d.log.Warn("dispatch: delivery failed; retrying later", "subscription", s.ID, "attempts", pr.Attempts,
		"retry_in", st.next.Sub(now), "err", err)
}

// persist stores the settlement's progress when it changed the cursor,
// the attempts or the state, and returns the subscription as it now
// stands. The store outlives a stopping dispatcher's context: what was
// delivered is recorded.
func (d *Dispatcher) persist(ctx context.Context, s meta.Subscription, set settlement) (meta.Subscription, bool) {
	pr := set.progress
	if pr.Cursor == s.Cursor && pr.Attempts == s.Attempts && pr.State == s.State {
		return s, set.more
	}
	if err := d.meta.AdvanceSubscription(context.WithoutCancel(ctx), s.Tenant, s.ID, pr); err != nil {
		d.log.Warn("dispatch: record progress", "subscription", s.ID, "err", err)
		return s, false
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
