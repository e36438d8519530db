package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/dispatch"
	"github.com/claimcheck/claimcheck/meta"
)

// Subscriptions (ADR 0240): the engine validates them, seals their
// secrets with the master key and keeps them in the metadata store; the
// dispatcher (package dispatch) delivers. A subscription belongs to one
// tenant and only ever reads that tenant's events.

var subscriptionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// maxFilterItems bounds each list of a filter.
const maxFilterItems = 64

// checkFilter validates a filter; prefix names its fields in errors.
func checkFilter(prefix string, f claimcheck.EventFilter) error {
	if len(f.Types) > maxFilterItems || len(f.Namespaces) > maxFilterItems || len(f.Labels) > maxFilterItems {
		return invalidf("%s: at most %d types, namespaces and labels each", prefix, maxFilterItems)
	}
	for _, t := range f.Types {
		if !slices.Contains(claimcheck.EventKinds, t) {
			return invalidf("%stypes: unknown event type %q; known: %v", prefix, t, claimcheck.EventKinds)
		}
	}
	for _, ns := range f.Namespaces {
		if err := claimcheck.ValidateNamespace(ns); err != nil {
			return fmt.Errorf("%snamespaces: %w", prefix, err)
		}
	}
	for k, v := range f.Labels {
		if k == "" || len(k) > 63 || len(v) > 256 {
			return invalidf("%slabels: %q=%q: a key of 1 to 63 characters and a value of at most 256", prefix, k, v)
		}
	}
	return nil
}

// sealSecret is the stored form of a signing secret: sealed with the
// master key when one is set.
func (s *Store) sealSecret(id, secret string) ([]byte, string) {
	if s.keys == nil {
		return []byte(secret), ""
	}
	return s.keys.Seal("subscription/"+id, []byte(secret)), s.keys.ID()
}

// openSecret returns a subscription's signing key.
func (s *Store) openSecret(sub meta.Subscription) ([]byte, error) {
	secret := sub.Secret
	if sub.SecretKeyID != "" {
		if s.keys == nil {
			return nil, fmt.Errorf("%w: the secret of subscription %s is sealed with master key %s, but no master_key is set",
				claimcheck.ErrUnavailable, sub.ID, sub.SecretKeyID)
		}
		var err error
		if secret, err = s.keys.Open("subscription/"+sub.ID, sub.SecretKeyID, sub.Secret); err != nil {
			return nil, err
		}
	}
	return dispatch.ParseSecret("secret", string(secret))
}

// CreateSubscription makes a subscription of tenant. Its answer is the
// only one that carries the secret.
func (s *Store) CreateSubscription(ctx context.Context, tenant string, spec claimcheck.SubscriptionSpec) (claimcheck.Subscription, error) {
	if err := claimcheck.ValidateTenant(tenant); err != nil {
		return claimcheck.Subscription{}, fmt.Errorf("create subscription: %w", err)
	}
	if spec.Secret == "" {
		spec.Secret = dispatch.NewSecret()
	}
	sub, err := s.newSubscription(tenant, spec, "")
	if err != nil {
		return claimcheck.Subscription{}, fmt.Errorf("create subscription: %w", err)
	}
	if err := s.meta.CreateSubscription(ctx, sub, s.limits.Subscriptions); err != nil {
		if errors.Is(err, meta.ErrConflict) {
			// Ids are the tenant's own (ADR 0269): only its own
			// subscriptions can take one.
			return claimcheck.Subscription{}, fmt.Errorf("create subscription: %w",
				invalidf("id: %q is taken by another subscription of this tenant", sub.ID))
		}
		if errors.Is(err, meta.ErrLimitReached) {
			return claimcheck.Subscription{}, fmt.Errorf("create subscription: %w",
				limitErr("subscriptions", s.limits.Subscriptions, "tenant_limits.subscriptions"))
		}
		return claimcheck.Subscription{}, metaErr("create subscription", err)
	}
	s.subscriptionsChanged()
	out := publicSubscription(sub)
	out.Secret = spec.Secret
	return out, nil
}

// newSubscription validates spec and makes the row.
func (s *Store) newSubscription(tenant string, spec claimcheck.SubscriptionSpec, field string) (meta.Subscription, error) {
	if spec.ID == "" {
		spec.ID = newID("sub_", s.clock.Now())
	}
	if !subscriptionIDPattern.MatchString(spec.ID) {
		return meta.Subscription{}, invalidf("%sid: %q: letters, digits, '.', '-' and '_', at most 64", field, spec.ID)
	}
	if spec.URL == "" {
		return meta.Subscription{}, invalidf("%surl: required", field)
	}
	if err := s.targets.CheckURL(field+"url", spec.URL); err != nil {
		return meta.Subscription{}, fmt.Errorf("%w: %w", claimcheck.ErrInvalidArgument, err)
	}
	if err := checkFilter(field, spec.EventFilter); err != nil {
		return meta.Subscription{}, err
	}
	if _, err := dispatch.ParseSecret(field+"secret", spec.Secret); err != nil {
		return meta.Subscription{}, fmt.Errorf("%w: %w", claimcheck.ErrInvalidArgument, err)
	}
	if n := spec.EventsPerRequest; n < 0 || n > claimcheck.MaxEventsPerRequest {
		return meta.Subscription{}, invalidf("%sevents_per_request: %d: from 1 (one CloudEvent per request) to %d (batched mode), or 0 for the server's default",
			field, n, claimcheck.MaxEventsPerRequest)
	}
	sealed, keyID := s.sealSecret(spec.ID, spec.Secret)
	now := s.clock.Now()
	return meta.Subscription{ID: spec.ID, Tenant: tenant, URL: spec.URL, Types: spec.Types, Namespaces: spec.Namespaces,
		Labels: spec.Labels, Secret: sealed, SecretKeyID: keyID, Enabled: true, Source: meta.SourceAPI, CreatedAt: now,
		EventsPerRequest: spec.EventsPerRequest,
		// A new subscription starts with the events from now on: the
		// history is in the audit trail.
		Cursor: now.UnixNano(), State: meta.SubscriptionActive}, nil
}

// Subscriptions lists tenant's subscriptions, without their secrets.
func (s *Store) Subscriptions(ctx context.Context, tenant string) ([]claimcheck.Subscription, error) {
	if err := claimcheck.ValidateTenant(tenant); err != nil {
		return nil, fmt.Errorf("subscriptions: %w", err)
	}
	subs, err := s.meta.Subscriptions(ctx, tenant)
	if err != nil {
		return nil, metaErr("subscriptions", err)
	}
	out := make([]claimcheck.Subscription, len(subs))
	for i, sub := range subs {
		out[i] = publicSubscription(sub)
	}
	return out, nil
}

// SubscriptionPage lists up to limit of tenant's subscriptions after the
// id cursor ("" from the first), by id, without their secrets; next is
// the cursor of the page after ("" after the last). limit 0 is
// claimcheck.DefaultListLimit, at most claimcheck.MaxListLimit (ADR 0270).
func (s *Store) SubscriptionPage(ctx context.Context, tenant, cursor string, limit int) (claimcheck.SubscriptionPage, error) {
	if err := claimcheck.ValidateTenant(tenant); err != nil {
		return claimcheck.SubscriptionPage{}, fmt.Errorf("subscriptions: %w", err)
	}
	switch {
	case limit == 0:
		limit = claimcheck.DefaultListLimit
	case limit < 0 || limit > claimcheck.MaxListLimit:
		return claimcheck.SubscriptionPage{}, invalidf("limit %d: want 1..%d", limit, claimcheck.MaxListLimit)
	}
	// One more than the page tells whether there is a next one.
	subs, err := s.meta.SubscriptionPage(ctx, tenant, cursor, limit+1)
	if err != nil {
		return claimcheck.SubscriptionPage{}, metaErr("subscriptions", err)
	}
	page := claimcheck.SubscriptionPage{Subscriptions: make([]claimcheck.Subscription, 0, min(len(subs), limit))}
	for i, sub := range subs {
		if i == limit {
			page.Next = subs[limit-1].ID
			break
		}
		page.Subscriptions = append(page.Subscriptions, publicSubscription(sub))
	}
	return page, nil
}

// readOnlyConfigured refuses a change to a subscription of the config
// file (ADR 0269): the operator set it, tenants only see it. Its id is
// in the config's id space, so the refusal needs no read and tells
// nothing about other tenants.
func (s *Store) readOnlyConfigured(id string) error {
	if !strings.HasPrefix(id, meta.ConfigIDPrefix) {
		return nil
	}
	file := "the server's config file (subscriptions.targets)"
	if s.configFile != "" {
		file = s.configFile + " (subscriptions.targets)"
	}
	return fmt.Errorf("%w: subscription %s is set by the operator in %s; change it there",
		claimcheck.ErrPermissionDenied, id, file)
}

// DeleteSubscription removes a subscription of tenant made over the API.
func (s *Store) DeleteSubscription(ctx context.Context, tenant, id string) error {
	if err := s.readOnlyConfigured(id); err != nil {
		return fmt.Errorf("delete subscription: %w", err)
	}
	if err := s.meta.DeleteSubscription(ctx, tenant, id); err != nil {
		return metaErr("delete subscription "+id, err)
	}
	s.subscriptionsChanged()
	return nil
}

// ResumeSubscription restarts delivery to a dead-lettered subscription
// of tenant made over the API, from the event that kept failing.
func (s *Store) ResumeSubscription(ctx context.Context, tenant, id string) error {
	if err := s.readOnlyConfigured(id); err != nil {
		return fmt.Errorf("resume subscription: %w", err)
	}
	if err := s.meta.ResumeSubscription(ctx, tenant, id); err != nil {
		return metaErr("resume subscription "+id, err)
	}
	s.subscriptionsChanged()
	return nil
}

// subscriptionsChanged has this process's dispatcher read the
// subscriptions at its next tick (another replica's sees the change
// within its relist interval).
func (s *Store) subscriptionsChanged() {
	if s.dispatcher != nil {
		s.dispatcher.SubscriptionsChanged()
	}
}

func publicSubscription(sub meta.Subscription) claimcheck.Subscription {
	out := claimcheck.Subscription{ID: sub.ID, Tenant: sub.Tenant, URL: sub.URL,
		EventFilter: claimcheck.EventFilter{Types: sub.Types, Namespaces: sub.Namespaces, Labels: sub.Labels},
		Enabled:     sub.Enabled, EventsPerRequest: sub.EventsPerRequest, Source: sub.Source, State: sub.State, Cursor: sub.Cursor, Delivered: sub.Delivered,
		Attempts: sub.Attempts, LastError: sub.LastError, CreatedAt: sub.CreatedAt}
	if !sub.FailingSince.IsZero() {
		t := sub.FailingSince
		out.FailingSince = &t
	}
	return out
}

// syncTargets makes the config's targets the subscriptions of source
// config. A target keeps its cursor across restarts; a new one starts
// from now.
func (s *Store) syncTargets(ctx context.Context, targets []dispatch.Target) error {
	subs := make([]meta.Subscription, 0, len(targets))
	seen := map[string]bool{}
	for i, t := range targets {
		field := fmt.Sprintf("subscriptions.targets[%d].", i)
		tenant := t.Tenant
		if tenant == "" {
			tenant = claimcheck.DefaultTenant
		}
		if err := claimcheck.ValidateTenant(tenant); err != nil {
			return fmt.Errorf("%stenant: %w", field, err)
		}
		if t.ID == "" || seen[tenant+"/"+t.ID] {
			return invalidf("%sid: required, and unique among the targets of its tenant", field)
		}
		seen[tenant+"/"+t.ID] = true
		if t.Secret == "" {
			return invalidf("%ssecret: required (whsec_ and the base64 of 24 to 64 random bytes)", field)
		}
		sub, err := s.newSubscription(tenant, claimcheck.SubscriptionSpec{ID: t.ID, URL: t.URL, EventFilter: t.EventFilter, Secret: t.Secret,
			EventsPerRequest: t.EventsPerRequest}, field)
		if err != nil {
			return err
		}
		// Its own id space (ADR 0269): no subscription a tenant makes
		// can take its id, so no tenant can stop the server's start.
		sub.ID = meta.ConfigIDPrefix + t.ID
		sub.Secret, sub.SecretKeyID = s.sealSecret(sub.ID, t.Secret)
		sub.Source, sub.Enabled = meta.SourceConfig, !t.Disabled
		subs = append(subs, sub)
	}
	if err := s.meta.SyncConfigSubscriptions(ctx, subs); err != nil {
		return metaErr("subscriptions.targets", err)
	}
	return nil
}

// StreamBounds are the seqs a live stream may begin after (ADR 0273):
// retained, the retention bound (events before it may have been pruned;
// 0 when events are kept for ever), and head, the newest seq the stream
// serves now (events older than subscriptions.settle). Seqs are the
// events' times in Unix nanoseconds, so both come from the clock.
func (s *Store) StreamBounds() (retained, head int64) {
	now := s.clock.Now()
	if s.eventRetention > 0 {
		retained = now.Add(-s.eventRetention).UnixNano()
	}
	return retained, now.Add(-s.settle).UnixNano()
}

// StreamEvents returns the next events of tenant's live stream after
// seq after that filter selects, and the seq to resume after (past the
// events filtered out too). Like the dispatcher, it reads only events
// old enough that no transaction can still write before them
// (subscriptions.settle), so a stream resumed after its last id misses
// nothing. After 0 reads from the oldest event there is; where a stream
// starts ("now", "oldest", a Last-Event-ID) is the caller's to resolve
// with StreamBounds.
func (s *Store) StreamEvents(ctx context.Context, tenant string, f claimcheck.EventFilter, after int64, limit int) ([]claimcheck.Event, int64, error) {
	if err := claimcheck.ValidateTenant(tenant); err != nil {
		return nil, after, fmt.Errorf("events stream: %w", err)
	}
	if err := checkFilter("", f); err != nil {
		return nil, after, fmt.Errorf("events stream: %w", err)
	}
	_, upTo := s.StreamBounds()
	if upTo <= after {
		return nil, after, nil
	}
	es, err := s.meta.FeedEvents(ctx, tenant, after, upTo, limit, len(f.Labels) > 0)
	if err != nil {
		return nil, after, metaErr("events stream", err)
	}
	var out []claimcheck.Event
	for _, e := range es {
		if dispatch.Match(f, e) {
			out = append(out, dispatch.Public(e))
		}
		after = e.Seq
	}
	return out, after, nil
}
