package claimcheck

import "time"

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
