package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/meta"
)

// EventsConfig is the events section of the config:
//
//	events:
//	  retention: 720h   # events older than this are pruned by the sweeper
type EventsConfig struct {
	// Retention is how long events are kept (default 720h, 30 days;
	// negative keeps them for ever). The background sweeper deletes older
	// ones in pages.
	Retention claimcheck.Retention `yaml:"retention" json:"retention"`
}

// DefaultEventRetention is the retention of events when the config names
// none.
const DefaultEventRetention = 30 * 24 * time.Hour

// ClaimEvents returns a page of a claim's events; see Auditor.
func (s *Store) ClaimEvents(ctx context.Context, ref claimcheck.Ref, q claimcheck.EventQuery) ([]claimcheck.Event, error) {
	if !claimcheck.ValidClaimID(ref.ID) {
		return nil, fmt.Errorf("events: %w", invalidf("claim id %q is malformed", ref.ID))
	}
	limit, err := q.Check()
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", ref.ID, err)
	}
	// The claim row outlives the claim (state deleted), then its
	// tombstone (ADR 0263), until history.retention prunes it (ADR
	// 0077), so its namespace can be
	// checked like for every other lookup, and an unknown or pruned id is
	// not_found rather than an empty list.
	c, err := s.meta.Claim(ctx, ref.ID)
	if err != nil {
		return nil, metaErr("events of "+ref.ID, err)
	}
	if ref.Namespace != "" && ref.Namespace != c.Namespace {
		return nil, fmt.Errorf("events of %s: %w", ref.ID, claimcheck.ErrNotFound)
	}
	// Redeem events are written with the batched read receipts: wait for
	// the receipts of reads served before this call, like Stat does.
	if err := s.reads.sync(ctx); err != nil {
		return nil, fmt.Errorf("events of %s: %w", ref.ID, err)
	}
	// Since filters here: a claim has few events, and the per-claim index
	// orders them by seq. Pages are read until limit events pass.
	var out []claimcheck.Event
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
func (s *Store) NamespaceEvents(ctx context.Context, ns string, q claimcheck.EventQuery) ([]claimcheck.Event, error) {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	limit, err := q.Check()
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
func (s *Store) TenantEvents(ctx context.Context, tenant string, q claimcheck.EventQuery) ([]claimcheck.Event, error) {
	if err := claimcheck.ValidateTenant(tenant); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	limit, err := q.Check()
	if err != nil {
		return nil, fmt.Errorf("events of tenant %s: %w", tenant, err)
	}
	es, err := s.meta.TenantEvents(ctx, tenant, q.Since, q.After, limit)
	if err != nil {
		return nil, metaErr("events of tenant "+tenant, err)
	}
	return publicEvents(es, time.Time{}), nil
}

func publicEvents(es []meta.Event, since time.Time) []claimcheck.Event {
	out := make([]claimcheck.Event, 0, len(es))
	for _, e := range es {
		if e.At.Before(since) {
			continue
		}
		out = append(out, claimcheck.Event{Seq: e.Seq, At: e.At, Kind: e.Kind, Namespace: e.Namespace, Tenant: e.Tenant, ClaimID: e.ClaimID,
			BlobID: e.BlobID, Actor: e.Actor, Reason: e.Reason, Detail: e.Detail})
	}
	return out
}
