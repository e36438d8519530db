package claimcheck

import "time"

// Subscriptions push a tenant's events to a receiver over HTTP as they
// happen (ADR 0240): signed CloudEvents, delivered at least once from the
// audit trail, in order per claim. The same filters select the events of
// the live stream (GET /v1/events/stream).

// Event kinds a subscription or the live stream may name. A claim's life:
// created (a put committed, a direct or resumable upload confirmed, a
// dedup hit), confirmed (after created, when the claim came from a
// direct upload confirmed or a resumable upload completed), redeemed,
// first_redeemed (after the redeemed event that took the read count from
// zero), released (one consumer), all_released (the last
// expected consumer), extended, expired, expired_unread (expired without
// a single read, beside expired), deleted, reaped (a pending upload never
// confirmed or aborted); holds; the garbage collector's findings and dead
// letters; damage; crypto-shredding (data_key_destroyed: every claim of
// the namespace gone); API keys and failed authentications.
var EventKinds = []string{
	"created", "confirmed", "redeemed", "first_redeemed", "released", "all_released", "extended", "expired", "expired_unread", "deleted", "reaped",
	"hold_set", "hold_cleared",
	"dead_letter", "dead_letter_retry", "object_missing", "refcount_drift", "debris_deleted",
	"blob_damaged", "blob_repaired", "blob_verified",
	"data_key_destroyed", "data_key_rewrapped",
	"key_created", "key_revoked", "auth_failed",
	"subscription_dead_lettered",
}

// EventFilter selects events; an empty field selects everything.
type EventFilter struct {
	// Types are event kinds (EventKinds).
	Types []string `json:"types,omitempty"`
	// Namespaces are namespaces of the tenant; an event outside every
	// namespace (an API key's) passes only when this is empty.
	Namespaces []string `json:"namespaces,omitempty"`
	// Labels a claim must all have, as given at put; events without a
	// claim pass only when this is empty.
	Labels map[string]string `json:"labels,omitempty"`
}

// SubscriptionSpec is what a subscription is created from.
type SubscriptionSpec struct {
	// ID names the subscription (optional: one is made up); letters,
	// digits, '-', '_' and '.', at most 64.
	ID string `json:"id,omitempty"`
	// URL receives the events: http or https.
	URL string `json:"url"`
	EventFilter
	// Secret signs every delivery (Standard Webhooks: "whsec_" and the
	// base64 of 24 to 64 random bytes). Optional: one is made up and
	// answered once, by the create.
	Secret string `json:"secret,omitempty"`
	// EventsPerRequest is how the receiver takes its events: 1, one
	// CloudEvent per request (structured mode,
	// application/cloudevents+json); above 1, the batched mode
	// (application/cloudevents-batch+json), a JSON array of at most this
	// many; 0, the server's subscriptions.events_per_request. At most
	// MaxEventsPerRequest.
	EventsPerRequest int `json:"events_per_request,omitempty"`
}

// MaxEventsPerRequest bounds a subscription's events_per_request: one
// request's body stays a few MiB at most.
const MaxEventsPerRequest = 1000

// SubscriptionPage is a page of a tenant's subscriptions, ordered by id
// (GET /v1/subscriptions). Next is the cursor of the page after, absent
// after the last page.
type SubscriptionPage struct {
	Subscriptions []Subscription `json:"subscriptions"`
	Next          string         `json:"next,omitempty"`
}

// Subscription is a receiver of a tenant's events and how delivery
// stands. Its secret is never listed back: only the answer to its
// creation carries it.
type Subscription struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	URL    string `json:"url"`
	EventFilter
	Secret  string `json:"secret,omitempty"`
	Enabled bool   `json:"enabled"`
	// EventsPerRequest is the subscription's choice of mode (see
	// SubscriptionSpec); 0 (absent): the server's default.
	EventsPerRequest int `json:"events_per_request,omitempty"`
	// Source is "api", or "config" for the operator's targets in the
	// config file (changed and removed there only).
	Source string `json:"source"`
	// State is active, lagging (behind the events' retention bound:
	// events it has not taken may be pruned) or dead_lettered (an event
	// kept failing past the operator's bound; delivery stopped until
	// resumed).
	State string `json:"state"`
	// Cursor is the seq of the last event delivered (or filtered out)
	// with every earlier one: delivery resumes after it.
	Cursor       int64      `json:"cursor,string"` // a string in JSON (ADR 0273)
	Delivered    int64      `json:"delivered"`
	Attempts     int        `json:"attempts,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	FailingSince *time.Time `json:"failing_since,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
}

// SubscriptionAttempt is an event of a subscription that waits for
// delivery or was given up on (ADR 0277): a failed event parks its claim,
// and the claim's later events wait behind it while other claims' events
// flow. State is "parked" (retried at NextAttempt, or when the event
// before it in its claim is delivered) or "dead_lettered" (failed for the
// configured attempts or age; its claim's later events went on).
type SubscriptionAttempt struct {
	Event        Event      `json:"event"`
	State        string     `json:"state"`
	Attempts     int        `json:"attempts"`
	FailingSince *time.Time `json:"failing_since,omitempty"`
	NextAttempt  *time.Time `json:"next_attempt,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
}

// SubscriptionAttemptPage is a page of a subscription's parked and
// dead-lettered events in seq order (GET /v1/subscriptions/{id}/attempts);
// Next is the cursor of the page after, absent after the last.
type SubscriptionAttemptPage struct {
	Attempts []SubscriptionAttempt `json:"attempts"`
	Next     string                `json:"next,omitempty"`
}

// SubscriptionRetry answers POST /v1/subscriptions/{id}/retry: how many
// parked and dead-lettered events are due again.
type SubscriptionRetry struct {
	Retried int `json:"retried"`
}

// SubscriptionReplay answers POST /v1/subscriptions/{id}/replay: the
// subscription's cursor now; delivery goes on after it.
type SubscriptionReplay struct {
	Cursor int64 `json:"cursor,string"`
}
