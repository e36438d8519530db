package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/meta"
)

// The parked events of a subscription (ADR 0277): listed, retried now,
// and the cursor set back for a replay.

// subscriptionOf returns tenant's subscription id, ErrNotFound if it has
// none (another tenant's is not found either: ids are per tenant).
func (s *Store) subscriptionOf(ctx context.Context, op, tenant, id string) (meta.Subscription, error) {
	if err := claimcheck.ValidateTenant(tenant); err != nil {
		return meta.Subscription{}, fmt.Errorf("%s: %w", op, err)
	}
	subs, err := s.meta.Subscriptions(ctx, tenant)
	if err != nil {
		return meta.Subscription{}, metaErr(op, err)
	}
	for _, sub := range subs {
		if sub.ID == id {
			return sub, nil
		}
	}
	return meta.Subscription{}, fmt.Errorf("%s: subscription %s: %w", op, id, claimcheck.ErrNotFound)
}

// SubscriptionAttempts lists up to limit parked and dead-lettered events
// of tenant's subscription id after the cursor after ("" from the first;
// the seq of the last one listed), in seq order. limit 0 is
// claimcheck.DefaultListLimit, at most claimcheck.MaxListLimit. A
// configured target's are listed too (reading changes nothing).
func (s *Store) SubscriptionAttempts(ctx context.Context, tenant, id, after string, limit int) (claimcheck.SubscriptionAttemptPage, error) {
	const op = "subscription attempts"
	switch {
	case limit == 0:
		limit = claimcheck.DefaultListLimit
	case limit < 0 || limit > claimcheck.MaxListLimit:
		return claimcheck.SubscriptionAttemptPage{}, invalidf("limit %d: want 1..%d", limit, claimcheck.MaxListLimit)
	}
	from := int64(math.MinInt64)
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil {
			return claimcheck.SubscriptionAttemptPage{}, invalidf("after %q: want the seq of the last attempt listed", after)
		}
		from = n
	}
	if _, err := s.subscriptionOf(ctx, op, tenant, id); err != nil {
		return claimcheck.SubscriptionAttemptPage{}, err
	}
	ps, err := s.meta.ParkedEvents(ctx, tenant, id, from, limit+1)
	if err != nil {
		return claimcheck.SubscriptionAttemptPage{}, metaErr(op, err)
	}
	page := claimcheck.SubscriptionAttemptPage{Attempts: make([]claimcheck.SubscriptionAttempt, 0, min(len(ps), limit))}
	for i, p := range ps {
		if i == limit {
			page.Next = strconv.FormatInt(ps[limit-1].Event.Seq, 10)
			break
		}
		page.Attempts = append(page.Attempts, publicAttempt(p))
	}
	return page, nil
}

func publicAttempt(p meta.ParkedEvent) claimcheck.SubscriptionAttempt {
	out := claimcheck.SubscriptionAttempt{Event: dispatch.Public(p.Event), State: p.State, Attempts: p.Attempts, LastError: p.LastError}
	if !p.FailingSince.IsZero() {
		t := p.FailingSince
		out.FailingSince = &t
	}
	if !p.NextAttempt.IsZero() {
		t := p.NextAttempt
		out.NextAttempt = &t
	}
	return out
}

// RetrySubscription makes every parked and dead-lettered event of
// tenant's subscription id due now, its attempts cleared, and returns
// how many. A dead-lettered event is sent again after the events of its
// claim that went on without it. A configured target is the operator's:
// ErrPermissionDenied, as for resume.
func (s *Store) RetrySubscription(ctx context.Context, tenant, id string) (claimcheck.SubscriptionRetry, error) {
	const op = "retry subscription"
	if err := s.readOnlyConfigured(id); err != nil {
		return claimcheck.SubscriptionRetry{}, fmt.Errorf("%s: %w", op, err)
	}
	if _, err := s.subscriptionOf(ctx, op, tenant, id); err != nil {
		return claimcheck.SubscriptionRetry{}, err
	}
	n, err := s.meta.RetryParked(ctx, tenant, id, s.clock.Now())
	if err != nil {
		return claimcheck.SubscriptionRetry{}, metaErr(op, err)
	}
	s.subscriptionsChanged()
	return claimcheck.SubscriptionRetry{Retried: n}, nil
}

// ReplaySubscription sets the cursor of tenant's subscription id so that
// the events after since are delivered (again): since is an RFC 3339
// time or an event seq (the events after it). Events older than the
// retention kept are gone; the replay starts at the oldest there is. A
// configured target is the operator's: ErrPermissionDenied.
func (s *Store) ReplaySubscription(ctx context.Context, tenant, id, since string) (claimcheck.SubscriptionReplay, error) {
	const op = "replay subscription"
	if err := s.readOnlyConfigured(id); err != nil {
		return claimcheck.SubscriptionReplay{}, fmt.Errorf("%s: %w", op, err)
	}
	cursor, err := replayCursor(since)
	if err != nil {
		return claimcheck.SubscriptionReplay{}, err
	}
	if _, err := s.subscriptionOf(ctx, op, tenant, id); err != nil {
		return claimcheck.SubscriptionReplay{}, err
	}
	if err := s.meta.ReplaySubscription(ctx, tenant, id, cursor); err != nil {
		return claimcheck.SubscriptionReplay{}, metaErr(op+" "+id, err)
	}
	s.subscriptionsChanged()
	return claimcheck.SubscriptionReplay{Cursor: cursor}, nil
}

// replayCursor reads since: an event seq, the events after it; or an RFC
// 3339 time, the events at or after it (a seq is its event's time in
// nanoseconds, ADR 0240).
func replayCursor(since string) (int64, error) {
	if since == "" {
		return 0, invalidf("since: required (an RFC 3339 time or an event seq)")
	}
	if n, err := strconv.ParseInt(since, 10, 64); err == nil {
		if n < 0 {
			return 0, invalidf("since %q: a seq is not negative", since)
		}
		return n, nil
	}
	t, err := time.Parse(time.RFC3339Nano, since)
	if err != nil {
		return 0, invalidf("since %q: want an RFC 3339 time (2026-01-09T12:00:00Z) or an event seq", since)
	}
	return t.UnixNano() - 1, nil
}
