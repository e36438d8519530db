package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/claimcheck/claimcheck"
)

// Message is a consumed record with its payload resolved.
type Message struct {
	// Record is the record as consumed (for an offloaded value, its Value
	// is empty and its HeaderRef header holds the reference).
	Record *kgo.Record
	// Body is the payload: the record's value, or the claim's verified
	// bytes. Nil when Err is set.
	Body []byte
	// Ref is the claim reference of an offloaded record, nil for an
	// inline one.
	Ref *claimcheck.Ref
	// Err is set when the reference can never be resolved: the claim is
	// gone (errors.Is(Err, claimcheck.ErrGone); errors.As gives the
	// *claimcheck.GoneError with its Reason), unknown, corrupt, or the
	// header is not a reference. The handler is called so that it can
	// record the loss; the record is then dead-lettered (if configured)
	// and committed whatever the handler returns, since re-reading it
	// cannot help.
	Err error
}

// Handler processes one record. Returning an error stops Run: Kafka has
// no per-record retry, so the record and the rest of its batch are
// re-read by the partition's next owner (this consumer restarted, or
// another group member after the rebalance), inside the retention window.
type Handler func(ctx context.Context, m *Message) error

// ConsumerConfig configures a Consumer.
type ConsumerConfig struct {
	// Group is the consumer group (required). Claims are released under
	// this name, so with fan-out by ConsumerNames it must be one of them.
	Group string
	// Topics are the topics to consume (required).
	Topics []string
	// DeadLetterTopic, when set, receives a copy of every record whose
	// reference cannot be resolved (with HeaderError, HeaderGoneReason and
	// HeaderTopic added) before its offset is committed.
	DeadLetterTopic string
	// MaxPollRecords bounds the records handled between two commits
	// (default 100).
	MaxPollRecords int
	// Metrics receives the consumer's metrics (nil: none).
	Metrics *Metrics
	// Logger receives release failures (default slog.Default()).
	Logger *slog.Logger
	// LargeMessage, when set, reads records without HeaderRef in
	// bakdata's large-message format (largemessage.go, ADR 0281).
	LargeMessage *LargeMessageConfig
}

// Consumer is a consumer-group member that resolves claim-check envelopes
// and releases claims after their offsets are committed.
type Consumer struct {
	claims  claimcheck.Claims
	client  *kgo.Client
	handler Handler
	cfg     ConsumerConfig
}

// NewConsumer creates the group member: a kgo.Client made from opts
// (brokers, TLS, ...) plus the group, the topics, manual commits and
// rebalances that wait for the current batch to be committed
// (kgo.BlockRebalanceOnPoll), so a partition never changes owner between
// a record's handling and its commit.
func NewConsumer(claims claimcheck.Claims, handler Handler, cfg ConsumerConfig, opts ...kgo.Opt) (*Consumer, error) {
	if claims == nil || handler == nil {
		return nil, fmt.Errorf("kafka consumer: %w: claims and handler are required", claimcheck.ErrInvalidArgument)
	}
	if cfg.Group == "" || len(cfg.Topics) == 0 {
		return nil, fmt.Errorf("kafka consumer: %w: Group and Topics are required", claimcheck.ErrInvalidArgument)
	}
	if cfg.MaxPollRecords <= 0 {
		cfg.MaxPollRecords = 100
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	opts = append(opts,
		kgo.ConsumerGroup(cfg.Group), kgo.ConsumeTopics(cfg.Topics...),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer %s: %w", cfg.Group, err)
	}
	return &Consumer{claims: claims, client: client, handler: handler, cfg: cfg}, nil
}

// Client is the consumer's kgo.Client (it also produces dead letters).
func (c *Consumer) Client() *kgo.Client { return c.client }

// Close leaves the group (its partitions go to the other members) and
// closes the client. Records handled but not committed are re-read by
// the partitions' next owners.
func (c *Consumer) Close() { c.client.CloseAllowingRebalance() }

// Run consumes until ctx is done (it then returns nil) or a record cannot
// be handled. Each poll's records are resolved and handled in order; then
// their offsets are committed, and then their claims are released as the
// group. If the handler fails, or the store is unavailable, Run returns
// the error without committing that poll's records, so they are re-read;
// their claims were not released and still resolve inside the retention
// window.
func (c *Consumer) Run(ctx context.Context) error {
	for {
		fetches := c.client.PollRecords(ctx, c.cfg.MaxPollRecords)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			c.client.AllowRebalance()
			return nil
		}
		var ferr error
		fetches.EachError(func(topic string, partition int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("fetch %s[%d]: %w", topic, partition, err))
		})
		if ferr != nil {
			c.client.AllowRebalance()
			return fmt.Errorf("kafka consumer %s: %w", c.cfg.Group, ferr)
		}
		err := c.handleBatch(ctx, fetches.Records())
		c.client.AllowRebalance()
		if err != nil && ctx.Err() != nil {
			// Stopped mid-batch: the uncommitted records are re-read.
			return nil
		}
		if err != nil {
			return fmt.Errorf("kafka consumer %s: %w", c.cfg.Group, err)
		}
	}
}

// handleBatch handles records, then commits them all and releases their
// claims. Nothing is committed if any record fails.
func (c *Consumer) handleBatch(ctx context.Context, records []*kgo.Record) error {
	if len(records) == 0 {
		return nil
	}
	type settled struct {
		rec     *kgo.Record
		ref     *claimcheck.Ref
		outcome string
	}
	done := make([]settled, 0, len(records))
	for _, rec := range records {
		// The handler, and the redeem, continue the producer's trace
		// (tracecontext.go).
		rctx := contextOf(ctx, rec)
		m, err := c.Resolve(rctx, rec)
		if err != nil {
			c.resolveError(rec.Topic, err)
			return fmt.Errorf("resolve %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
		}
		herr := c.handler(rctx, m)
		if m.Err != nil {
			// The handler has seen it: dead-letter it even if ctx ends now.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			c.resolveError(rec.Topic, m.Err)
			c.cfg.Logger.WarnContext(ctx, "claimcheck kafka: reference cannot be resolved, skipping the record",
				"group", c.cfg.Group, "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "err", m.Err)
			outcome := "skipped"
			if c.cfg.DeadLetterTopic != "" {
				if err := c.deadLetter(sctx, m); err != nil {
					return err
				}
				outcome = "dead_lettered"
			}
			done = append(done, settled{rec: rec, outcome: outcome})
			continue
		}
		if herr != nil {
			return fmt.Errorf("handle %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, herr)
		}
		done = append(done, settled{rec: rec, ref: m.Ref, outcome: "committed"})
	}

	// The batch is handled: settle it even if ctx ends now, or the work
	// would be repeated by the next owner for nothing.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	recs := make([]*kgo.Record, len(done))
	for i, d := range done {
		recs[i] = d.rec
	}
	if err := c.client.CommitRecords(sctx, recs...); err != nil {
		// Not committed: the records come back, and their claims must
		// still be there for them.
		return fmt.Errorf("commit: %w", err)
	}
	for _, d := range done {
		if c.cfg.Metrics != nil {
			c.cfg.Metrics.consumed.WithLabelValues(d.rec.Topic, c.cfg.Group, d.outcome).Inc()
		}
		if d.ref == nil {
			continue
		}
		if err := c.claims.Release(sctx, *d.ref, c.cfg.Group); err != nil && !errors.Is(err, claimcheck.ErrGone) {
			// The record is committed; the claim ends at its own
			// deadline. Gone is fine: it ended already.
			if c.cfg.Metrics != nil {
				c.cfg.Metrics.releaseFailures.WithLabelValues(d.rec.Topic, c.cfg.Group).Inc()
			}
			c.cfg.Logger.ErrorContext(ctx, "claimcheck kafka: release failed after commit",
				"group", c.cfg.Group, "claim", d.ref.ID, "err", err)
		}
	}
	return nil
}

// Resolve reads the payload of rec. A reference that can never be
// resolved is reported in Message.Err; an error that a retry may cure
// (the store is unavailable, ctx ended) is returned.
func (c *Consumer) Resolve(ctx context.Context, rec *kgo.Record) (*Message, error) {
	return resolve(ctx, c.claims, c.cfg.LargeMessage, rec)
}

func resolve(ctx context.Context, claims claimcheck.Claims, large *LargeMessageConfig, rec *kgo.Record) (*Message, error) {
	m := &Message{Record: rec}
	var raw []byte
	for _, h := range rec.Headers {
		if h.Key == HeaderRef {
			raw = h.Value
		}
	}
	if raw == nil && large != nil {
		body, err := DecodeLarge(ctx, *large, rec.Value, rec.Headers, false)
		return withBody(m, body, err)
	}
	if raw == nil {
		m.Body = rec.Value
		return m, nil
	}
	ref, err := claimcheck.ParseRef(raw)
	if err != nil {
		m.Err = fmt.Errorf("%s header: %w", HeaderRef, err)
		return m, nil
	}
	m.Ref = &ref
	body, err := claimcheck.Resolve(contextOf(ctx, rec), claims, claimcheck.Value{Ref: &ref})
	return withBody(m, body, err)
}

// withBody records on m the body a fetch answered: a permanent failure
// is the message's own error (it goes to the dead-letter topic), any
// other is returned, so the poll stops and the record is read again.
func withBody(m *Message, body []byte, err error) (*Message, error) {
	switch {
	case err == nil:
		m.Body = body
	case claimcheck.Permanent(err):
		m.Err = err
	default:
		return nil, err
	}
	return m, nil
}

func (c *Consumer) deadLetter(ctx context.Context, m *Message) error {
	rec := m.Record
	dl := &kgo.Record{Topic: c.cfg.DeadLetterTopic, Key: rec.Key, Value: rec.Value,
		Headers: append(slices.Clip(rec.Headers),
			kgo.RecordHeader{Key: HeaderError, Value: []byte(m.Err.Error())},
			kgo.RecordHeader{Key: HeaderTopic, Value: []byte(rec.Topic)})}
	var gone *claimcheck.GoneError
	if errors.As(m.Err, &gone) {
		dl.Headers = append(dl.Headers, kgo.RecordHeader{Key: HeaderGoneReason, Value: []byte(gone.Reason)})
	}
	if err := c.client.ProduceSync(ctx, dl).FirstErr(); err != nil {
		return fmt.Errorf("dead-letter %s[%d]@%d to %s: %w (after: %w)", rec.Topic, rec.Partition, rec.Offset, c.cfg.DeadLetterTopic, err, m.Err)
	}
	return nil
}

func (c *Consumer) resolveError(topic string, err error) {
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.resolveErrors.WithLabelValues(topic, c.cfg.Group, claimcheck.ResolveFailure(err)).Inc()
	}
}
