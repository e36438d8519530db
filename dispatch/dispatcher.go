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
	"github.com/claimcheck/claimcheck/meta"
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
	AdvanceSubscription(ctx context.Context, id string, p meta.SubscriptionProgress) error
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
	holder  string
	metrics *metrics

	relistNow atomic.Bool // a subscription changed in this process

	mu       sync.Mutex
	subs     map[string]*subState // by subscription id
	listed   []meta.Subscription  // as last read
	listedAt time.Time
	cancel   context.CancelFunc
	done     chan struct{}
	stopped  bool
}

// subState is what the holder keeps of a subscription between rounds.
type subState struct {
	running  bool
	next     time.Time      // no attempt before (backoff)
	sent     map[int64]bool // delivered above the stored cursor (another claim's event failed first)
	failures int
	idle     int                // looks in a row that found no event
	quietTil time.Time          // wall time: no look before (idle)
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
	return &Dispatcher{cfg: cfg, meta: m, open: open, clock: clk, log: log, post: newPoster(cfg.TargetPolicy, cfg.Timeout),
		holder: meta.LeaseHolder(), metrics: newMetrics(reg), subs: map[string]*subState{}}
}

// SubscriptionsChanged tells the dispatcher that a subscription was
// made, removed or resumed in this process: the next tick reads them
// again instead of waiting for relist.
func (d *Dispatcher) SubscriptionsChanged() { d.relistNow.Store(true) }

// Start runs the dispatcher in the background and returns at once.
func (d *Dispatcher) Start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done != nil || d.stopped {
		return
	}
	ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	d.done = make(chan struct{})
	go d.run(ctx)
}

// Stop ends the dispatcher and waits for its deliveries; idempotent. It
// gives the lease up, so another replica takes over at once.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	d.stopped = true
	cancel, done := d.cancel, d.done
	d.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
	d.post.closeIdle()
}

func (d *Dispatcher) run(ctx context.Context) {
	defer close(d.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	var renewed time.Time
	held := false
	for {
		now := d.clock.Now()
		// Renew at a third of the TTL: a write every few seconds, not
		// every tick.
		if !held || now.Sub(renewed) > leaseTTL/3 {
			ok, err := d.meta.TryLease(ctx, DispatchLease, d.holder, now, leaseTTL)
			if err != nil && ctx.Err() == nil {
				d.log.Warn("dispatch: lease", "err", err)
			}
			if ok && !held {
				d.forget() // a new term: what another holder sent is in the cursors
			}
			// Read again after a new term (another holder moved the
			// cursors) and after MarkLagging (it moves states).
			d.relistNow.Store(true)
			held, renewed = ok, now
			if held {
				if n, err := d.meta.MarkLagging(ctx, now.Add(-d.cfg.LagBound)); err == nil {
					d.metrics.lagging.Set(float64(n))
				} else if ctx.Err() == nil {
					d.log.Warn("dispatch: mark lagging subscriptions", "err", err)
				}
			}
		}
		if held {
			d.tick(ctx, &wg)
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			if held {
				if err := d.meta.ReleaseLease(context.WithoutCancel(ctx), DispatchLease, d.holder); err != nil {
					d.log.Warn("dispatch: releasing the lease failed; it expires by itself", "err", err)
				}
			}
			return
		case <-t.C:
		}
	}
}

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
	fresh := d.relistNow.Swap(false) || time.Since(d.listedAt) >= relist
	if fresh {
		subs, err := d.meta.Subscriptions(ctx, "")
		if err != nil {
			d.relistNow.Store(true)
			if ctx.Err() == nil {
				d.log.Warn("dispatch: read subscriptions", "err", err)
			}
			return
		}
		d.listed, d.listedAt = subs, time.Now()
	}
	now := d.clock.Now()
	dead := 0
	d.mu.Lock()
	defer d.mu.Unlock()
	live := map[string]bool{}
	for _, s := range d.listed {
		live[s.ID] = true
		st := d.subs[s.ID]
		if st == nil {
			st = &subState{sent: map[int64]bool{}}
			d.subs[s.ID] = st
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
		if st.running || now.Before(st.next) || time.Now().Before(st.quietTil) {
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

// round delivers the subscription's next batch. Matching events are
// spread over Concurrency lanes by claim, each lane in seq order and
// stopping at its first failure, so a claim's events arrive in order and
// one failing receiver call holds back only its lane's later events. The
// cursor then moves over the prefix of the batch that was delivered or
// filtered out; events delivered past a failure are remembered (sent)
// and not sent again by this holder.
//
// It returns the subscription as it now stands, and whether the batch was
// full and delivered, so the next one can follow at once.
func (d *Dispatcher) round(ctx context.Context, s meta.Subscription, st *subState) (meta.Subscription, bool) {
	now := d.clock.Now()
	upTo := now.Add(-d.cfg.Settle).UnixNano()
	if upTo <= s.Cursor {
		return s, false
	}
	es, err := d.meta.FeedEvents(ctx, s.Tenant, s.Cursor, upTo, d.cfg.Batch, len(s.Labels) > 0)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("dispatch: read events", "subscription", s.ID, "err", err)
		}
		return s, false
	}
	if len(es) == 0 {
		// Nothing new: look again after twice the wait of the last
		// empty look, up to quietLooks intervals, so an idle replica
		// does not read the table ten times a second for nothing, and
		// the first event after a quiet spell still waits at most that.
		st.idle = min(st.idle+1, 8)
		st.quietTil = time.Now().Add(min(d.cfg.Interval<<(st.idle-1), quietLooks*d.cfg.Interval) - d.cfg.Interval)
		return s, false
	}
	st.idle, st.quietTil = 0, time.Time{}
	filter := claimcheck.EventFilter{Types: s.Types, Namespaces: s.Namespaces, Labels: s.Labels}
	if len(st.lanes) != d.cfg.Concurrency {
		st.lanes = make([]*lane, d.cfg.Concurrency)
		for i := range st.lanes {
			st.lanes[i] = &lane{}
		}
	}
	lanes := st.lanes
	for _, ln := range lanes {
		ln.idx = ln.idx[:0]
	}
	for i, e := range es {
		if !Match(filter, e) || st.sent[e.Seq] {
			continue
		}
		ln := lanes[laneOf(e, len(lanes))]
		ln.idx = append(ln.idx, i)
	}
	key, err := d.open(s)
	if err != nil {
		d.log.Error("dispatch: the subscription's secret does not open", "subscription", s.ID, "err", err)
	}
	t, terr := newTarget(s.URL)
	if err == nil && terr != nil {
		err = fmt.Errorf("url: %w", terr)
	}
	// The subscription's own mode, else the configured default.
	per := cmp.Or(s.EventsPerRequest, d.cfg.EventsPerRequest)
	var mu sync.Mutex
	firstErr := err
	var wg sync.WaitGroup
	for _, ln := range lanes {
		if len(ln.idx) == 0 || err != nil {
			continue
		}
		ln.sign, ln.batched = newSigner(key), per > 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			// per events at a time, in the lane's order: a request
			// that fails stops the lane, so nothing of a claim goes
			// ahead of an earlier event of it.
			for part := range slices.Chunk(ln.idx, per) {
				ln.batch = ln.batch[:0]
				for _, i := range part {
					ln.batch = append(ln.batch, es[i])
				}
				err := d.deliver(ctx, t, ln)
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
		}()
	}
	wg.Wait()

	p := meta.SubscriptionProgress{Cursor: s.Cursor, State: s.State}
	for _, e := range es {
		if Match(filter, e) && !st.sent[e.Seq] {
			break
		}
		p.Cursor = e.Seq
	}
	// Counted once, when the cursor passes them; sent above the cursor
	// stay remembered until it does.
	p.Delivered = 0
	for seq := range st.sent {
		if seq <= p.Cursor {
			p.Delivered++
			delete(st.sent, seq)
		}
	}
	if firstErr != nil && ctx.Err() != nil {
		return s, false // stopping: the next holder goes on from the stored cursor
	}
	if firstErr != nil {
		st.failures++
		p.Attempts = s.Attempts + 1
		p.LastError = firstErr.Error()
		p.FailingSince = s.FailingSince
		if p.Cursor > s.Cursor || p.FailingSince.IsZero() {
			p.FailingSince = now // a new event at the head of the line
			if p.Cursor > s.Cursor {
				p.Attempts = 1
			}
		}
		if now.Sub(p.FailingSince) >= d.cfg.DeadLetterAfter {
			p.State = meta.SubscriptionDeadLettered
			d.log.Error("dispatch: subscription dead-lettered: its oldest undelivered event kept failing",
				"subscription", s.ID, "since", p.FailingSince, "err", firstErr)
		}
		st.next = now.Add(d.backoff(st.failures))
		d.log.Warn("dispatch: delivery failed; retrying later", "subscription", s.ID, "attempts", p.Attempts,
			"retry_in", st.next.Sub(now), "err", firstErr)
	} else {
		st.failures = 0
	}
	more := firstErr == nil && len(es) == d.cfg.Batch
	if p.Cursor == s.Cursor && p.Attempts == s.Attempts && p.State == s.State {
		return s, more
	}
	if err := d.meta.AdvanceSubscription(context.WithoutCancel(ctx), s.ID, p); err != nil {
		d.log.Warn("dispatch: record progress", "subscription", s.ID, "err", err)
		return s, false
	}
	s.Cursor, s.State, s.Attempts, s.FailingSince, s.LastError = p.Cursor, p.State, p.Attempts, p.FailingSince, p.LastError
	return s, more
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

// deliver posts the lane's batch in one request: one structured-mode
// CloudEvent, or for a subscription in batched mode a batch (webhook-id: the
// first and last event ids, FIRST-LAST, or the one id of a batch of
// one). Any 2xx is delivered; everything else (3xx included: redirects
// are not followed) is a failure to retry.
func (d *Dispatcher) deliver(ctx context.Context, t *target, ln *lane) error {
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
