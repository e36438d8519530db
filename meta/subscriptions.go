package meta

import (
	"context"
	"errors"
	"time"
)

// Subscriptions: receivers of a tenant's claim events over HTTP (ADR
// 0240). The events table is their outbox: the dispatcher reads it from
// each subscription's cursor and moves the cursor after a receiver took
// the events, so a subscription needs no row per event and a put writes
// nothing for it.

// Subscription states. A subscription is delivered to while it is
// enabled and active or lagging; dead_lettered stops delivery until an
// operator resumes it.
const (
	SubscriptionActive       = "active"        // delivering; its cursor holds back event pruning
	SubscriptionLagging      = "lagging"       // its cursor fell behind the retention bound: pruning no longer waits for it
	SubscriptionDeadLettered = "dead_lettered" // an event kept failing past the bound: delivery stopped
)

// Subscription sources: made over the API, or named in the config file
// (re-read at every start; the API cannot change or remove those).
const (
	SourceAPI    = "api"
	SourceConfig = "config"
)

// ConfigIDPrefix starts the id of every subscription of source config
// (ADR 0269): a configured target "ops" is "config:ops". An id made over
// the API has no ':', so the two id spaces never meet.
const ConfigIDPrefix = "config:"

// ErrLimitReached: a tenant has as many objects of a kind as its limit
// allows (ADR 0270).
var ErrLimitReached = errors.New("meta: limit reached")

// Subscription is one receiver of events and its delivery progress.
type Subscription struct {
	ID         string
	Tenant     string
	URL        string
	Types      []string          // event kinds delivered; empty: every kind
	Namespaces []string          // namespaces delivered; empty: every namespace of Tenant
	Labels     map[string]string // labels a claim must have (all of them); empty: no filter
	// Secret is the signing secret as stored: sealed with the master key
	// when one is set (SecretKeyID names it), else as given. It is never
	// listed back to a client.
	Secret      []byte
	SecretKeyID string
	Enabled     bool
	Source      string
	CreatedAt   time.Time
	// EventsPerRequest is the most events one delivery carries (1:
	// structured mode; above 1: batched mode); 0: the dispatcher's
	// configured default.
	EventsPerRequest int

	// Cursor is the seq of the newest event every earlier one of which
	// was delivered or filtered out: delivery resumes after it.
	Cursor int64
	State  string
	// FailingSince is when the event at the cursor first failed (zero:
	// not failing); Attempts counts its failed attempts and LastError
	// says what the last one met.
	FailingSince time.Time
	Attempts     int
	LastError    string
	Delivered    int64 // events delivered, in all
}

// SubscriptionProgress is what one delivery round changes on a
// subscription.
type SubscriptionProgress struct {
	Cursor int64 // never moved back
	// From, when not 0, is the cursor the round started from: a cursor
	// stored since (a replay, ADR 0277) is left as it is.
	From         int64
	State        string
	FailingSince time.Time
	Attempts     int
	LastError    string
	Delivered    int64 // added to the total
}

// FeedEvent is an event as the dispatcher and the live stream read it:
// its tenant resolved (a claim's through its namespace) and the labels
// of its claim.
// SubscriptionsChanged names the cursor (Store.Cursor) that every change
// of the subscriptions other than a round's own progress sets to a new
// token: creates, deletes, resumes, replays, retries, the configured
// targets' sync and MarkLagging's moves. A dispatcher reads the
// subscriptions again only when it moved (ADR 0278).
const SubscriptionsChanged = "subscriptions_changed"

type FeedEvent struct {
	Event
	Labels map[string]string
}

// SubscriptionStore keeps subscriptions and reads the event feed. Part of
// Store.
type SubscriptionStore interface {
	// CreateSubscription inserts s. Ids are unique per tenant:
	// ErrConflict if s.Tenant has one with s.ID. ErrLimitReached if
	// s.Tenant has limit subscriptions of source api already (limit 0:
	// no limit); the count and the insert are one transaction.
	CreateSubscription(ctx context.Context, s Subscription, limit int) error

	// SyncConfigSubscriptions makes the subscriptions of source config
	// the given ones, in one transaction: new ones inserted, changed ones
	// updated with their progress kept, missing ones deleted (their
	// parked events too), dead-lettered ones active again and their
	// dead-lettered events parked again (the operator's resume and retry
	// is a start; ADR 0277).
	SyncConfigSubscriptions(ctx context.Context, subs []Subscription) error

	// Subscriptions returns the subscriptions of tenant ("" every
	// tenant's), ordered by tenant and id. Every change to them but a
	// round's own progress (AdvanceSubscription) also rewrites the
	// cursor SubscriptionsChanged in the same transaction.
	Subscriptions(ctx context.Context, tenant string) ([]Subscription, error)

	// SubscriptionPage returns up to limit subscriptions of tenant with
	// an id after after ("" from the first), ordered by id.
	SubscriptionPage(ctx context.Context, tenant, after string, limit int) ([]Subscription, error)

	// DeleteSubscription deletes a subscription of tenant made over the
	// API. ErrNotFound if there is none (a configured one is not).
	DeleteSubscription(ctx context.Context, tenant, id string) error

	// ResumeSubscription puts a dead-lettered or disabled subscription of
	// tenant made over the API back to active, its failure count cleared.
	// ErrNotFound if there is none (a configured one is not: the config
	// file says whether it is enabled).
	ResumeSubscription(ctx context.Context, tenant, id string) error

	// AdvanceSubscription records a delivery round's progress. The cursor
	// only moves forward, and not when p.From is set and the stored
	// cursor is no longer it.
	AdvanceSubscription(ctx context.Context, tenant, id string, p SubscriptionProgress) error

	// MarkLagging marks lagging the active, enabled subscriptions whose
	// cursor is before bound, and active again the lagging ones that
	// caught up; it returns how many are lagging now.
	MarkLagging(ctx context.Context, bound time.Time) (int, error)

	// FeedEvents returns up to limit events with afterSeq < seq <= upTo,
	// in seq order, with their tenant, and their claims' labels when
	// labels is set (a filter names labels; without one, the claims are
	// not read). tenant "" reads every tenant's.
	FeedEvents(ctx context.Context, tenant string, afterSeq, upTo int64, limit int, labels bool) ([]FeedEvent, error)

	ParkingStore
}

// Parked event states (ADR 0277). A parked event waits in its claim's
// lane for a retry; a dead-lettered one failed for the configured
// attempts or age and is kept for the tenant to see and retry, and no
// longer holds its lane.
const (
	ParkedWaiting      = "parked"
	ParkedDeadLettered = "dead_lettered"
)

// ParkedEvent is an event of a subscription that was not delivered with
// the rest of its batch (ADR 0277): it failed, or an earlier event of
// its claim had. The event is stored whole, so event pruning never takes
// what a lane still owes.
type ParkedEvent struct {
	Tenant         string
	SubscriptionID string
	// ClaimID is the lane: a claim's parked events are delivered in seq
	// order, and the claim's later events wait behind them. "" (an event
	// of no claim) is a lane of its own.
	ClaimID string
	Event   FeedEvent
	State   string // ParkedWaiting or ParkedDeadLettered
	// Attempts counts the failed deliveries of this event; FailingSince
	// is when the first of them was made (zero: it has waited behind an
	// earlier event of its claim and not been tried alone).
	Attempts     int
	FailingSince time.Time
	NextAttempt  time.Time
	LastError    string // egress.Redact-ed, as the tenant reads it
}

// ParkingStore keeps the parked events of subscriptions (ADR 0277).
// Part of SubscriptionStore.
type ParkingStore interface {
	// ParkEvents stores es (each names its tenant and subscription); an
	// event parked already (same tenant, subscription and seq) is kept
	// as it is.
	ParkEvents(ctx context.Context, es []ParkedEvent) error

	// ParkedEvents returns up to limit parked and dead-lettered events
	// of the subscription id of tenant with a seq after afterSeq, in seq
	// order.
	ParkedEvents(ctx context.Context, tenant, id string, afterSeq int64, limit int) ([]ParkedEvent, error)

	// UpdateParked records a delivery attempt of a parked event: its
	// state, attempts, failing since, next attempt and last error.
	UpdateParked(ctx context.Context, p ParkedEvent) error

	// UnparkEvents deletes the parked events of the subscription with
	// the given seqs (delivered).
	UnparkEvents(ctx context.Context, tenant, id string, seqs []int64) error

	// RetryParked puts every parked and dead-lettered event of the
	// subscription back to parked with no attempts, due at now; it
	// returns how many there are.
	RetryParked(ctx context.Context, tenant, id string, now time.Time) (int, error)

	// ReplaySubscription sets the subscription's cursor to cursor, in
	// either direction, and clears its failures: delivery goes on (again)
	// after that seq. ErrNotFound if tenant has no subscription id.
	ReplaySubscription(ctx context.Context, tenant, id string, cursor int64) error
}
