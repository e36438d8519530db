package claimcheck

import (
	"context"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// Event is one entry of the audit trail: a lifecycle change of a claim
// (created, redeemed, released, expired, deleted, reaped), a legal hold
// set or lifted, an API key created or revoked, a finding of the garbage
// collector, or a failed authentication, with the actor that caused it
// (an API key id, "sweeper" for due work the store did by itself, "cli"
// for the offline commands, "" when unknown) and, for finished claims,
// the reason. Events of a claim or a namespace carry the namespace; the
// administrative events of a tenant (keys, failed authentications with
// one of its keys) carry the tenant.
type Event struct {
	Seq       int64     `json:"seq"`
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"ns,omitempty"`
	Tenant    string    `json:"tenant,omitempty"`
	ClaimID   string    `json:"claim_id,omitempty"`
	BlobID    string    `json:"blob_id,omitempty"`
	Actor     string    `json:"actor,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Detail    string    `json:"detail,omitempty"`
}

// EventQuery selects a page of events.
type EventQuery struct {
	// After returns only events with Seq > After: pass the last Seq of the
	// previous page to get the next one.
	After int64
	// Since returns only events at or after this time (namespace queries).
	Since time.Time
	// Limit is the page size (default and maximum MaxEventPage).
	Limit int
}

// MaxEventPage bounds one page of events.
const MaxEventPage = 1000

// EventsConfig is the events section of the config:
//
//	events:
//	  retention: 720h   # events older than this are pruned by the sweeper
type EventsConfig struct {
	// Retention is how long events are kept (default 720h, 30 days;
	// negative keeps them for ever). The background sweeper deletes older
	// ones in pages.
	Retention Retention `yaml:"retention" json:"retention"`
}

// DefaultEventRetention is the retention of events when the config names
// none.
const DefaultEventRetention = 30 * 24 * time.Hour

// Auditor reads the audit trail. *Store and *client.Client implement it.
type Auditor interface {
	// ClaimEvents returns a page of the events of the claim of ref. A ref
	// with a namespace must match the claim's (ErrNotFound otherwise, as
	// for every claim lookup). Events of finished claims remain until
	// retention prunes them.
	ClaimEvents(ctx context.Context, ref Ref, q EventQuery) ([]Event, error)
	// NamespaceEvents returns a page of the events of namespace ns.
	NamespaceEvents(ctx context.Context, ns string, q EventQuery) ([]Event, error)
	// TenantEvents returns a page of the administrative events of tenant:
	// API keys created and revoked (namespace-scoped or not), and failed
	// authentications with one of its keys. Claim and hold events are
	// read per namespace.
	TenantEvents(ctx context.Context, tenant string, q EventQuery) ([]Event, error)
}

var _ Auditor = (*Store)(nil)

func (q EventQuery) limit() (int, error) {
	switch {
	case q.Limit < 0:
		return 0, invalidf("limit %d: must not be negative", q.Limit)
	case q.Limit == 0 || q.Limit > MaxEventPage:
		return MaxEventPage, nil
	}
	return q.Limit, nil
}

// ClaimEvents returns a page of a claim's events; see Auditor.
func (s *Store) ClaimEvents(ctx context.Context, ref Ref, q EventQuery) ([]Event, error) {
	if !ValidClaimID(ref.ID) {
		return nil, fmt.Errorf("events: %w", invalidf("claim id %q is malformed", ref.ID))
	}
	limit, err := q.limit()
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", ref.ID, err)
	}
	// The claim row outlives the claim (state deleted) until
	// history.retention prunes it (ADR 0077), so its namespace can be
	// checked like for every other lookup, and an unknown or pruned id is
	// not_found rather than an empty list.
	c, err := s.meta.Claim(ctx, ref.ID)
	if err != nil {
		return nil, metaErr("events of "+ref.ID, err)
	}
	if ref.Namespace != "" && ref.Namespace != c.Namespace {
		return nil, fmt.Errorf("events of %s: %w", ref.ID, ErrNotFound)
	}
	// Redeem events are written with the batched read receipts: wait for
	// the receipts of reads served before this call, like Stat does.
	if err := s.reads.sync(ctx); err != nil {
		return nil, fmt.Errorf("events of %s: %w", ref.ID, err)
	}
	// Since filters here: a claim has few events, and the per-claim index
	// orders them by seq. Pages are read until limit events pass.
	var out []Event
	after := q.After
	for len(out) < limit {
		es, err := s.meta.ClaimEvents(ctx, ref.ID, after, limit)
		if err != nil {
			return nil, metaErr("events of "+ref.ID, err)
		}
		for _, e := range publicEvents(es, q.Since) {
			if len(out) < limit {
				out = append(out, e)
			}
		}
		if len(es) < limit {
			break
		}
		after = es[len(es)-1].Seq
	}
	return out, nil
}

// NamespaceEvents returns a page of a namespace's events; see Auditor.
func (s *Store) NamespaceEvents(ctx context.Context, ns string, q EventQuery) ([]Event, error) {
	if err := ValidateNamespace(ns); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	limit, err := q.limit()
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", ns, err)
	}
	if err := s.reads.sync(ctx); err != nil {
		return nil, fmt.Errorf("events of %s: %w", ns, err)
	}
	es, err := s.meta.NamespaceEvents(ctx, ns, q.Since, q.After, limit)
	if err != nil {
		return nil, metaErr("events of "+ns, err)
	}
	return publicEvents(es, time.Time{}), nil
}

// TenantEvents returns a page of a tenant's administrative events; see
// Auditor.
func (s *Store) TenantEvents(ctx context.Context, tenant string, q EventQuery) ([]Event, error) {
	if err := ValidateTenant(tenant); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	limit, err := q.limit()
	if err != nil {
		return nil, fmt.Errorf("events of tenant %s: %w", tenant, err)
	}
	es, err := s.meta.TenantEvents(ctx, tenant, q.Since, q.After, limit)
	if err != nil {
		return nil, metaErr("events of tenant "+tenant, err)
	}
	return publicEvents(es, time.Time{}), nil
}

func publicEvents(es []meta.Event, since time.Time) []Event {
	out := make([]Event, 0, len(es))
	for _, e := range es {
		if e.At.Before(since) {
			continue
		}
		out = append(out, Event{Seq: e.Seq, At: e.At, Kind: e.Kind, Namespace: e.Namespace, Tenant: e.Tenant, ClaimID: e.ClaimID,
			BlobID: e.BlobID, Actor: e.Actor, Reason: e.Reason, Detail: e.Detail})
	}
	return out
}
