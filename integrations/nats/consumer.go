package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/claimcheck/claimcheck"
)

// settleTimeout bounds the ack, release, dead-letter publish or term of a
// message whose handler has run.
const settleTimeout = 30 * time.Second

// Message is a consumed message with its payload resolved.
type Message struct {
	// Msg is the JetStream message as delivered (for an offloaded body,
	// its Data is empty and its HeaderRef header holds the reference).
	Msg jetstream.Msg
	// Body is the payload: the message's data, or the claim's verified
	// bytes. Nil when Err is set.
	Body []byte
	// Ref is the claim reference of an offloaded message, nil for an
	// inline one.
	Ref *claimcheck.Ref
	// Err is set when the reference can never be resolved: the claim is
	// gone (errors.Is(Err, claimcheck.ErrGone); errors.As gives the
	// *claimcheck.GoneError with its Reason), unknown, corrupt, or the
	// header is not a reference. The handler is called so that it can
	// record the loss; the message is then terminated (or dead-lettered)
	// whatever the handler returns, since redelivering it cannot help.
	Err error
}

// Handler processes one message. Returning nil acks the message (and
// then releases its claim); returning an error naks it for redelivery.
type Handler func(ctx context.Context, m *Message) error

// Outcome is what the consumer did with a message.
type Outcome string

// The outcomes of Handle.
const (
	Acked        Outcome = "acked"         // handler succeeded; acked (claim released)
	Nakked       Outcome = "nakked"        // handler failed, or the store was unavailable; redelivered later
	Terminated   Outcome = "terminated"    // the reference cannot be resolved; never redelivered
	DeadLettered Outcome = "dead_lettered" // as Terminated, after a copy went to the dead-letter subject
)

// ConsumerConfig configures a Consumer.
type ConsumerConfig struct {
	// Name is the consumer name releases are recorded under. Default: the
	// durable name of the JetStream consumer (its name if it has none).
	// With fan-out by ConsumerNames it must be one of those names.
	Name string
	// DeadLetterSubject, when set, receives a copy of every message whose
	// reference cannot be resolved (with HeaderError, HeaderGoneReason and
	// HeaderSubject set) before it is terminated. It must be captured by a
	// stream, or the publish fails and the message is nakked instead.
	DeadLetterSubject string
	// JetStream publishes to DeadLetterSubject (required with it).
	JetStream jetstream.JetStream
	// NakDelay delays redelivery after a handler error or an unavailable
	// store (0: redeliver at once).
	NakDelay time.Duration
	// Metrics receives the consumer's metrics (nil: none).
	Metrics *Metrics
	// Logger receives errors of messages handled by Consume (default
	// slog.Default()).
	Logger *slog.Logger
}

// Consumer resolves claim-check envelopes for a JetStream consumer and
// settles each message: ack and release, nak, or terminate.
type Consumer struct {
	claims  claimcheck.Claims
	cons    jetstream.Consumer
	handler Handler
	cfg     ConsumerConfig
}

// NewConsumer wraps cons, a consumer with explicit acks. handler runs once
// per delivery.
func NewConsumer(claims claimcheck.Claims, cons jetstream.Consumer, handler Handler, cfg ConsumerConfig) (*Consumer, error) {
	if claims == nil || cons == nil || handler == nil {
		return nil, fmt.Errorf("nats consumer: %w: claims, consumer and handler are required", claimcheck.ErrInvalidArgument)
	}
	if cfg.DeadLetterSubject != "" && cfg.JetStream == nil {
		return nil, fmt.Errorf("nats consumer: %w: DeadLetterSubject %q needs JetStream", claimcheck.ErrInvalidArgument, cfg.DeadLetterSubject)
	}
	info := cons.CachedInfo()
	if cfg.Name == "" && info != nil {
		cfg.Name = info.Config.Durable
		if cfg.Name == "" {
			cfg.Name = info.Name
		}
	}
	if cfg.Name == "" {
		return nil, fmt.Errorf("nats consumer: %w: no consumer name (set ConsumerConfig.Name)", claimcheck.ErrInvalidArgument)
	}
	if info != nil && info.Config.AckPolicy != jetstream.AckExplicitPolicy {
		return nil, fmt.Errorf("nats consumer %s: %w: ack policy %s, want explicit (claims are released on ack)", cfg.Name, claimcheck.ErrInvalidArgument, info.Config.AckPolicy)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Consumer{claims: claims, cons: cons, handler: handler, cfg: cfg}, nil
}

// Name is the consumer name releases are recorded under.
func (c *Consumer) Name() string { return c.cfg.Name }

// Consume handles messages as they arrive until ctx is done or the
// returned ConsumeContext is stopped. Errors of single messages go to the
// logger; the messages themselves are settled as Handle describes.
func (c *Consumer) Consume(ctx context.Context, opts ...jetstream.PullConsumeOpt) (jetstream.ConsumeContext, error) {
	cc, err := c.cons.Consume(func(msg jetstream.Msg) {
		if out, err := c.Handle(ctx, msg); err != nil {
			c.cfg.Logger.ErrorContext(ctx, "claimcheck nats: message not handled cleanly",
				"consumer", c.cfg.Name, "subject", msg.Subject(), "outcome", out, "err", err)
		}
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats consumer %s: consume: %w", c.cfg.Name, err)
	}
	go func() {
		select {
		case <-ctx.Done():
			cc.Stop()
		case <-cc.Closed():
		}
	}()
	return cc, nil
}

// Handle resolves msg, runs the handler and settles the message:
//   - the handler returned nil: ack (confirmed by the server), then
//     release the claim as this consumer;
//   - the handler returned an error: nak; a redelivery inside the
//     retention window resolves again;
//   - the reference can never be resolved (Message.Err): the handler is
//     told, then the message is dead-lettered if configured and
//     terminated;
//   - the store is unavailable: nak without running the handler.
//
// The error is the handler's, the store's, or the broker's; the outcome
// says what happened to the message.
func (c *Consumer) Handle(ctx context.Context, msg jetstream.Msg) (Outcome, error) {
	// The handler, and the redeem, continue the publisher's trace
	// (tracecontext.go).
	ctx = contextOf(ctx, msg.Headers())
	m, err := c.Resolve(ctx, msg)
	if err != nil {
		c.resolveError(msg.Subject(), err)
		return c.nak(msg, fmt.Errorf("resolve: %w", err))
	}
	herr := c.handler(ctx, m)
	// The handler has run: settle the message even if ctx ends now, or
	// its work would be done again for nothing.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if m.Err != nil {
		c.resolveError(msg.Subject(), m.Err)
		return c.terminate(sctx, m)
	}
	if herr != nil {
		return c.nak(msg, herr)
	}
	return c.Ack(sctx, m)
}

// Resolve reads the payload of msg. A reference that can never be
// resolved is reported in Message.Err; an error that a retry may cure
// (the store is unavailable, ctx ended) is returned.
func (c *Consumer) Resolve(ctx context.Context, msg jetstream.Msg) (*Message, error) {
	m := &Message{Msg: msg}
	raw := msg.Headers().Get(HeaderRef)
	if raw == "" {
		m.Body = msg.Data()
		return m, nil
	}
	ref, err := claimcheck.ParseRef([]byte(raw))
	if err != nil {
		m.Err = fmt.Errorf("%s header: %w", HeaderRef, err)
		return m, nil
	}
	m.Ref = &ref
	body, err := claimcheck.Resolve(contextOf(ctx, msg.Headers()), c.claims, claimcheck.Value{Ref: &ref})
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

// Ack acknowledges m (waiting for the server to confirm, so that the
// claim is never released for a message that will still be redelivered)
// and then releases its claim as this consumer. A failed release is
// returned with Outcome Acked: the message is settled, and the claim ends
// at its own deadline.
func (c *Consumer) Ack(ctx context.Context, m *Message) (Outcome, error) {
	if err := m.Msg.DoubleAck(ctx); err != nil {
		// Not acked as far as we know: the message comes back, and the
		// claim must still be there for it.
		return Nakked, fmt.Errorf("ack: %w", err)
	}
	c.count(m.Msg.Subject(), Acked)
	if m.Ref == nil {
		return Acked, nil
	}
	err := c.claims.Release(ctx, *m.Ref, c.cfg.Name)
	if err != nil && !errors.Is(err, claimcheck.ErrGone) {
		// Gone is fine: the claim ended on its own (delete_after_read)
		// and there is nothing left to release.
		if c.cfg.Metrics != nil {
			c.cfg.Metrics.releaseFailures.WithLabelValues(m.Msg.Subject(), c.cfg.Name).Inc()
		}
		return Acked, fmt.Errorf("release claim %s as %s: %w", m.Ref.ID, c.cfg.Name, err)
	}
	return Acked, nil
}

func (c *Consumer) nak(msg jetstream.Msg, cause error) (Outcome, error) {
	var err error
	if c.cfg.NakDelay > 0 {
		err = msg.NakWithDelay(c.cfg.NakDelay)
	} else {
		err = msg.Nak()
	}
	c.count(msg.Subject(), Nakked)
	if err != nil {
		return Nakked, errors.Join(cause, fmt.Errorf("nak: %w", err))
	}
	return Nakked, cause
}

// terminate dead-letters (if configured) and terminates a message whose
// reference cannot be resolved. If the dead-letter publish fails the
// message is nakked instead, so that it is not lost.
func (c *Consumer) terminate(ctx context.Context, m *Message) (Outcome, error) {
	reason := "claimcheck: " + m.Err.Error()
	out := Terminated
	if c.cfg.DeadLetterSubject != "" {
		dl := &natsgo.Msg{Subject: c.cfg.DeadLetterSubject, Data: m.Msg.Data(), Header: natsgo.Header{}}
		for k, vs := range m.Msg.Headers() {
			dl.Header[k] = append([]string(nil), vs...)
		}
		dl.Header.Set(HeaderError, m.Err.Error())
		dl.Header.Set(HeaderSubject, m.Msg.Subject())
		var gone *claimcheck.GoneError
		if errors.As(m.Err, &gone) {
			dl.Header.Set(HeaderGoneReason, string(gone.Reason))
		}
		if _, err := c.cfg.JetStream.PublishMsg(ctx, dl); err != nil {
			return c.nak(m.Msg, fmt.Errorf("dead-letter to %s: %w (after: %w)", c.cfg.DeadLetterSubject, err, m.Err))
		}
		out = DeadLettered
	}
	if err := m.Msg.TermWithReason(reason); err != nil {
		return out, fmt.Errorf("terminate: %w (after: %w)", err, m.Err)
	}
	c.count(m.Msg.Subject(), out)
	return out, m.Err
}

func (c *Consumer) count(subject string, out Outcome) {
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.consumed.WithLabelValues(subject, c.cfg.Name, string(out)).Inc()
	}
}

func (c *Consumer) resolveError(subject string, err error) {
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.resolveErrors.WithLabelValues(subject, c.cfg.Name, claimcheck.ResolveFailure(err)).Inc()
	}
}
