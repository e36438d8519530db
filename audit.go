package claimcheck

import (
	"context"
	"time"
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

// Auditor reads the audit trail. *engine.Store and *client.Client implement it.
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

// Check validates the query and returns its page size: MaxEventPage
// when Limit is zero or larger.
func (q EventQuery) Check() (int, error) {
	switch {
	case q.Limit < 0:
		return 0, invalidf("limit %d: must not be negative", q.Limit)
	case q.Limit == 0 || q.Limit > MaxEventPage:
		return MaxEventPage, nil
	}
	return q.Limit, nil
}
