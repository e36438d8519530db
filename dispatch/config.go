package dispatch

import (
	"time"

	"github.com/claimcheck/claimcheck"
)

// Config is the subscriptions section of the config:
//
//	subscriptions:
//	  allow_loopback_targets: false
//	  allow_private_targets: false
//	  allow_targets: []       # CIDRs beyond the public ranges (egress, ADR 0268)
//	  allow_ports: []         # when given, the only ports allow_targets may be reached on
//	  concurrency: 4          # deliveries in flight per subscription
//	  timeout: 10s            # one delivery, connection to answer
//	  dead_letter_after: 24h  # an event failing this long is dead-lettered; every delivery failing this long stops the subscription
//	  max_attempts: 0         # when above 0, an event is dead-lettered after this many failed attempts
//	  lag_bound: 72h          # a cursor older than this no longer holds back event pruning
//	  events_per_request: 1   # above 1: CloudEvents batched mode, events per request
//	  targets:                # the operator's own receivers
//	    - id: ops-expired
//	      tenant: default
//	      url: https://hooks.example.com/claimcheck
//	      types: [expired_unread]
//	      secret: whsec_...
type Config struct {
	// Disabled stops delivery from this process (subscriptions can still
	// be managed; another replica delivers).
	Disabled     bool `yaml:"disabled"`
	TargetPolicy `yaml:",inline"`
	// Concurrency is the deliveries in flight per subscription (default
	// 4). Events of one claim are never in flight together, so they
	// arrive in order.
	Concurrency int `yaml:"concurrency"`
	// Timeout bounds one delivery (default 10s).
	Timeout time.Duration `yaml:"timeout"`
	// DeadLetterAfter is how long a parked event may keep failing before
	// it is dead-lettered (its claim's later events flow again), and how
	// long every delivery of a subscription may fail before the
	// subscription is marked dead_lettered and delivery stops (default
	// 24h; ADR 0277).
	DeadLetterAfter time.Duration `yaml:"dead_letter_after"`
	// MaxAttempts, when above 0, dead-letters a parked event after that
	// many failed attempts, before DeadLetterAfter (default 0: by age
	// only).
	MaxAttempts int `yaml:"max_attempts"`
	// LagBound is how far behind a subscription's cursor may fall before
	// it is marked lagging, after which event pruning no longer waits for
	// it (default 72h).
	LagBound time.Duration `yaml:"lag_bound"`
	// Settle is how old an event must be before it is delivered: an
	// event's seq is its time, stamped before its transaction commits, so
	// a cursor may only pass times every transaction that could still
	// write there has committed by (default 250ms; ADR 0240).
	Settle time.Duration `yaml:"settle"`
	// Interval is how often the dispatcher looks for new events while
	// they keep coming (default 100ms). After looks that found none, a
	// subscription is looked at less often, down to every 4 intervals,
	// so an idle replica does not poll for nothing. Subscriptions are
	// read again every second (at once after a change in this process).
	Interval time.Duration `yaml:"interval"`
	// BackoffMin and BackoffMax bound the wait before a failed delivery
	// is tried again; it doubles per failure (defaults 1s and 5m).
	BackoffMin time.Duration `yaml:"backoff_min"`
	BackoffMax time.Duration `yaml:"backoff_max"`
	// Batch is the events read per subscription and round (default
	// 100); the cursor is stored after each, so it bounds what a killed
	// dispatcher had in flight and its successor sends again.
	Batch int `yaml:"batch"`
	// EventsPerRequest is how many events one delivery carries (default
	// 1: a structured-mode CloudEvent per request). Above 1, deliveries
	// are in the batched mode, application/cloudevents-batch+json, a JSON
	// array of up to this many events of one lane in seq order, signed as
	// one body; a receiver deduplicates by each event's id (ADR 0240).
	// It is the default: a subscription that sets its own
	// events_per_request is delivered in the mode it chose.
	EventsPerRequest int `yaml:"events_per_request"`
	// Targets are subscriptions the operator names here; they are made,
	// changed and removed with the config, and listed with source config.
	Targets []Target `yaml:"targets"`
}

// Target is a subscription named in the config file.
type Target struct {
	ID                     string `yaml:"id"`
	Tenant                 string `yaml:"tenant"` // default: the default tenant
	URL                    string `yaml:"url"`
	claimcheck.EventFilter `yaml:",inline"`
	Secret                 string `yaml:"secret"` // required: whsec_...
	Disabled               bool   `yaml:"disabled"`
	// EventsPerRequest is the target's own mode (0: the section's).
	EventsPerRequest int `yaml:"events_per_request"`
}

// WithDefaults fills in the zero fields.
func (c Config) WithDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Timeout, 10*time.Second)
	def(&c.DeadLetterAfter, 24*time.Hour)
	def(&c.LagBound, 72*time.Hour)
	def(&c.Settle, 250*time.Millisecond)
	def(&c.Interval, 100*time.Millisecond)
	def(&c.BackoffMin, time.Second)
	def(&c.BackoffMax, 5*time.Minute)
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
	if c.EventsPerRequest <= 0 {
		c.EventsPerRequest = 1
	}
	return c
}

// The largest counts the subscriptions section takes. The dispatcher
// holds concurrency lanes of connections per subscription and batch
// events per subscription and round in memory; beyond these, a value is
// a typo (an extra zero or three), not a tuning.
const (
	MaxConcurrency = 256
	MaxBatch       = 10000
	MaxAttempts    = 1000000
)

// Validate refuses a section no dispatcher can run as written, naming
// the key as written ("subscriptions.timeout"). Zero is every field's
// default; a negative duration or count, a count above its bound (for
// events_per_request the API's own, claimcheck.MaxEventsPerRequest) or
// backoff_min above backoff_max is an error, where WithDefaults alone
// would have replaced it silently. The targets are the engine's to
// check (engine/subscriptions.go, as it checks a subscription made over
// the API; and whether a target's tenant is declared, since the tenants
// are its config).
func (c Config) Validate() error {
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"timeout", c.Timeout}, {"dead_letter_after", c.DeadLetterAfter}, {"lag_bound", c.LagBound}, {"settle", c.Settle},
		{"interval", c.Interval}, {"backoff_min", c.BackoffMin}, {"backoff_max", c.BackoffMax}} {
		if d.v < 0 {
			return &claimcheck.FieldError{Field: "subscriptions." + d.key, Got: d.v.String(), Reason: "must be positive (or 0 for the default)"}
		}
	}
	for _, n := range []struct {
		key      string
		v, limit int
	}{{"concurrency", c.Concurrency, MaxConcurrency}, {"batch", c.Batch, MaxBatch}, {"events_per_request", c.EventsPerRequest, claimcheck.MaxEventsPerRequest},
		{"max_attempts", c.MaxAttempts, MaxAttempts}} {
		if n.v < 0 || n.v > n.limit {
			return countError("subscriptions."+n.key, n.v, n.limit, "the default")
		}
	}
	if d := c.WithDefaults(); d.BackoffMin > d.BackoffMax {
		return &claimcheck.FieldError{Field: "subscriptions.backoff_min", Got: d.BackoffMin.String(),
			Reason: "must not be above subscriptions.backoff_max (" + d.BackoffMax.String() + ")"}
	}
	return nil
}
