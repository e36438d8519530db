package dispatch

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/claimcheck/claimcheck/egress"
	"github.com/claimcheck/claimcheck/meta"
)

// Parking (ADR 0277): an event that fails waits in its claim's lane, and
// the claim's later events behind it, while every other claim's events
// go on and the cursor moves past them. Each lane's first event is
// retried on its own backoff; it is dead-lettered after MaxAttempts
// failed attempts or DeadLetterAfter of failing, which releases the lane.

// parkedPage is how many parked events the holder reads at a time.
const parkedPage = 1000

// laneKey is the lane of an event: its claim, or for an event of no
// claim, the event alone (nothing waits behind it).
func laneKey(e meta.FeedEvent) string {
	if e.ClaimID != "" {
		return e.ClaimID
	}
	return "#" + strconv.FormatInt(e.Seq, 10)
}

// loadParked reads the subscription's parked events into st unless they
// are loaded; false when they could not be read.
func (d *Dispatcher) loadParked(ctx context.Context, s meta.Subscription, st *subState) bool {
	if st.loaded {
		return true
	}
	parked, rows := map[string][]meta.ParkedEvent{}, 0
	for after := int64(math.MinInt64); ; {
		page, err := d.meta.ParkedEvents(ctx, s.Tenant, s.ID, after, parkedPage)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("dispatch: read parked events", "subscription", s.ID, "err", err)
			}
			return false
		}
		for _, pe := range page {
			rows++
			after = pe.Event.Seq
			if pe.State == meta.ParkedWaiting {
				k := laneKey(pe.Event)
				parked[k] = append(parked[k], pe)
			}
		}
		if len(page) < parkedPage {
			break
		}
	}
	st.parked, st.rows, st.loaded = parked, rows, true
	return true
}

// due returns the waiting events of every lane whose first event is due
// by now, each lane whole and in seq order (its later events follow the
// first when that is delivered), up to about limit events.
func (st *subState) due(now time.Time, limit int) []meta.ParkedEvent {
	var out []meta.ParkedEvent
	for _, l := range st.parked {
		if len(out) >= limit {
			break
		}
		if !l[0].NextAttempt.After(now) {
			out = append(out, l...)
		}
	}
	return out
}

// settleParked settles the parked events the round retried: delivered
// ones are unparked; a lane's first failure counts an attempt, backs the
// lane off, and dead-letters the event after MaxAttempts or
// DeadLetterAfter (the lane's next event is then due at once).
func (d *Dispatcher) settleParked(set *settlement, p roundPlan) {
	tried := map[string]bool{}
	for i := p.batch; i < len(p.events); i++ {
		pe := p.parked[i-p.batch]
		k := laneKey(pe.Event)
		switch {
		case p.done[i]:
			set.unpark = append(set.unpark, pe.Event.Seq)
		case p.errs[i] != nil && !tried[k]:
			tried[k] = true
			pe.Attempts++
			if pe.FailingSince.IsZero() {
				pe.FailingSince = p.now
			}
			pe.LastError = egress.Redact(p.errs[i]).Error()
			pe.NextAttempt = p.now.Add(d.backoff(pe.Attempts))
			if (d.cfg.MaxAttempts > 0 && pe.Attempts >= d.cfg.MaxAttempts) || p.now.Sub(pe.FailingSince) >= d.cfg.DeadLetterAfter {
				pe.State, pe.NextAttempt = meta.ParkedDeadLettered, time.Time{}
				d.log.Error("dispatch: event dead-lettered; its claim's later events go on", "subscription", pe.SubscriptionID,
					"seq", pe.Event.Seq, "claim", pe.ClaimID, "attempts", pe.Attempts, "err", p.errs[i])
			}
			set.update = append(set.update, pe)
		}
	}
}

// parkBatch parks the batch's matching events that were not delivered:
// a claim's first failed event with its attempt counted (when the claim
// had nothing parked), and every other one behind it, untried.
func (d *Dispatcher) parkBatch(set *settlement, st *subState, p roundPlan) {
	headed := map[string]bool{}
	for i := range p.batch {
		e := p.events[i]
		if p.done[i] || !Match(p.filter, e) {
			continue
		}
		k := laneKey(e)
		pe := meta.ParkedEvent{Tenant: e.Tenant, ClaimID: e.ClaimID, Event: e, State: meta.ParkedWaiting}
		_, waiting := st.parked[k]
		if p.errs[i] != nil && !waiting && !headed[k] {
			pe.Attempts, pe.FailingSince = 1, p.now
			pe.NextAttempt = p.now.Add(d.backoff(1))
			pe.LastError = egress.Redact(p.errs[i]).Error()
		}
		headed[k] = true
		set.park = append(set.park, pe)
	}
}

// apply brings st's parked lanes to what the settlement leaves: delivered
// and dead-lettered events out, failed ones updated, new ones appended.
func (st *subState) apply(set settlement) {
	if st.parked == nil {
		st.parked = map[string][]meta.ParkedEvent{}
	}
	gone := map[int64]bool{}
	for _, seq := range set.unpark {
		gone[seq] = true
	}
	touched := map[string]bool{}
	for _, pe := range set.update {
		touched[laneKey(pe.Event)] = true
	}
	for k := range st.parked {
		if l := st.parked[k]; len(l) > 0 && (gone[l[0].Event.Seq] || touched[k]) {
			touched[k] = true
		}
	}
	updated := map[int64]meta.ParkedEvent{}
	for _, pe := range set.update {
		updated[pe.Event.Seq] = pe
	}
	for k := range touched {
		var kept []meta.ParkedEvent
		for _, pe := range st.parked[k] {
			if u, ok := updated[pe.Event.Seq]; ok {
				pe = u
			}
			if !gone[pe.Event.Seq] && pe.State == meta.ParkedWaiting {
				kept = append(kept, pe)
			}
		}
		if len(kept) == 0 {
			delete(st.parked, k)
		} else {
			st.parked[k] = kept
		}
	}
	for _, pe := range set.park {
		k := laneKey(pe.Event)
		if l := st.parked[k]; len(l) == 0 || l[len(l)-1].Event.Seq < pe.Event.Seq {
			st.parked[k] = append(l, pe)
		}
	}
	st.rows += len(set.park) - len(set.unpark)
}

// storeParking stores the settlement's parked events, deletes the
// delivered ones and records the retried ones.
func (d *Dispatcher) storeParking(ctx context.Context, s meta.Subscription, set settlement) error {
	// The lanes kept in memory (subState.apply) hold events parked by
	// this holder's rounds as they were planned, without the names the
	// rows are keyed by: every write names them here.
	for i := range set.park {
		set.park[i].Tenant, set.park[i].SubscriptionID = s.Tenant, s.ID
	}
	for i := range set.update {
		set.update[i].Tenant, set.update[i].SubscriptionID = s.Tenant, s.ID
	}
	if err := d.meta.ParkEvents(ctx, set.park); err != nil {
		return err
	}
	if err := d.meta.UnparkEvents(ctx, s.Tenant, s.ID, set.unpark); err != nil {
		return err
	}
	for _, pe := range set.update {
		if err := d.meta.UpdateParked(ctx, pe); err != nil {
			return err
		}
	}
	return nil
}

// announceDeadLetter logs the event that tells the tenant its
// subscription stopped (EventSubscriptionDeadLettered): other
// subscriptions of the tenant, and its event listing, see it.
func (d *Dispatcher) announceDeadLetter(ctx context.Context, s meta.Subscription, pr meta.SubscriptionProgress) {
	ev := meta.Event{At: d.clock.Now(), Kind: EventSubscriptionDeadLettered, Tenant: s.Tenant, Actor: "dispatcher",
		Detail: "subscription " + s.ID + ": every delivery failed since " + pr.FailingSince.UTC().Format(time.RFC3339) + ": " + pr.LastError}
	if err := d.meta.AppendEvents(ctx, []meta.Event{ev}); err != nil {
		d.log.Warn("dispatch: log the dead-lettered subscription", "subscription", s.ID, "err", err)
	}
}

// EventSubscriptionDeadLettered is the kind of the event logged when a
// subscription is dead-lettered (ADR 0277).
const EventSubscriptionDeadLettered = "subscription_dead_lettered"
