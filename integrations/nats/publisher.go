package nats

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/claimcheck/claimcheck"
)

// Header names of the envelope.
const (
	// HeaderRef carries the claim reference (its JSON, at most
	// claimcheck.MaxRefSize bytes) of an offloaded body. A message without
	// it is an inline message: its body is the payload.
	HeaderRef = "Claimcheck-Ref"
	// HeaderError is set on a dead-lettered message: why its reference
	// could not be resolved.
	HeaderError = "Claimcheck-Error"
	// HeaderGoneReason is set on a dead-lettered message whose claim was
	// gone: the claimcheck.GoneReason (expired, read_retention_over, ...).
	HeaderGoneReason = "Claimcheck-Gone-Reason"
	// HeaderSubject is set on a dead-lettered message: the subject it was
	// consumed from.
	HeaderSubject = "Claimcheck-Subject"
)

// cleanupTimeout bounds the deletion of an orphaned claim after a failed
// publish; it runs even when the caller's context is what failed.
const cleanupTimeout = 30 * time.Second

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Namespace is the claimcheck namespace bodies are stored in
	// (required).
	Namespace string
	// Threshold is the body size from which bodies are offloaded. Zero
	// means the namespace's threshold, read once by NewPublisher.
	Threshold claimcheck.Size
	// Consumers is the number of distinct consumers that must ack an
	// offloaded message before its claim is finished (fan-out to several
	// durable consumers). 0 means 1.
	Consumers int
	// ConsumerNames, when set, names the durable consumers whose acks
	// count; Consumers is then its length. A consumer not named cannot
	// release the claim.
	ConsumerNames []string
	// ContentType is stored with every claim this publisher creates.
	ContentType string
	// Labels are stored with every claim this publisher creates.
	Labels map[string]string
	// Metrics receives the publisher's metrics (nil: none).
	Metrics *Metrics
}

// Publisher publishes messages to JetStream, offloading large bodies.
// It is safe for concurrent use.
type Publisher struct {
	claims    claimcheck.Claims
	js        jetstream.JetStream
	cfg       PublisherConfig
	threshold int64
}

// NewPublisher returns a publisher that stores large bodies in claims and
// publishes through js. It reads the namespace's policy once (so a
// misconfigured namespace fails here, not on the first message) unless
// cfg.Threshold is set.
func NewPublisher(ctx context.Context, claims claimcheck.Claims, js jetstream.JetStream, cfg PublisherConfig) (*Publisher, error) {
	if claims == nil || js == nil {
		return nil, fmt.Errorf("nats publisher: %w: claims and js are required", claimcheck.ErrInvalidArgument)
	}
	if err := claimcheck.ValidateNamespace(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("nats publisher: namespace: %w", err)
	}
	if cfg.Threshold < 0 {
		return nil, fmt.Errorf("nats publisher: %w: threshold %d is negative", claimcheck.ErrInvalidArgument, cfg.Threshold)
	}
	if cfg.Consumers < 0 {
		return nil, fmt.Errorf("nats publisher: %w: consumers %d is negative", claimcheck.ErrInvalidArgument, cfg.Consumers)
	}
	threshold := int64(cfg.Threshold)
	if threshold == 0 {
		pol, err := claims.Policy(ctx, cfg.Namespace)
		if err != nil {
			return nil, fmt.Errorf("nats publisher: policy of %s: %w", cfg.Namespace, err)
		}
		threshold = int64(pol.Threshold)
	}
	return &Publisher{claims: claims, js: js, cfg: cfg, threshold: threshold}, nil
}

// Threshold is the body size from which this publisher offloads.
func (p *Publisher) Threshold() int64 { return p.threshold }

// Publish publishes data on subject; see PublishMsg.
func (p *Publisher) Publish(ctx context.Context, subject string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return p.PublishMsg(ctx, &natsgo.Msg{Subject: subject, Data: data}, opts...)
}

// PublishMsg publishes msg. A body of at least the threshold is stored in
// a claim first and the message carries its reference in HeaderRef with
// an empty body; a smaller body is published unchanged. msg is not
// modified.
//
// If the publish fails after the body was stored, the claim is deleted
// before PublishMsg returns, so a failed publish leaves nothing behind
// (docs/adr/0040). A retry is a new publish with a new claim.
func (p *Publisher) PublishMsg(ctx context.Context, msg *natsgo.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if msg.Header.Get(HeaderRef) != "" {
		return nil, fmt.Errorf("publish to %s: %w: the message already has a %s header", msg.Subject, claimcheck.ErrInvalidArgument, HeaderRef)
	}
	m := p.cfg.Metrics
	v, err := claimcheck.OffloadAt(ctx, p.claims, p.cfg.Namespace, msg.Data, p.threshold, claimcheck.PutOptions{
		ContentType: p.cfg.ContentType, Labels: p.cfg.Labels,
		Consumers: p.cfg.Consumers, ConsumerNames: p.cfg.ConsumerNames,
	})
	if err != nil {
		if m != nil {
			m.publishFailures.WithLabelValues(msg.Subject).Inc()
		}
		return nil, fmt.Errorf("publish to %s: offload: %w", msg.Subject, err)
	}
	th := traceHeaders(ctx)
	if !v.Offloaded() {
		ack, err := p.js.PublishMsg(ctx, withTraceContext(msg, th), opts...)
		if err != nil {
			if m != nil {
				m.publishFailures.WithLabelValues(msg.Subject).Inc()
			}
			return nil, fmt.Errorf("publish to %s: %w", msg.Subject, err)
		}
		if m != nil {
			m.published.WithLabelValues(msg.Subject, "inline").Inc()
			m.publishedBytes.WithLabelValues(msg.Subject, "inline").Add(float64(len(msg.Data)))
		}
		return ack, nil
	}

	env := &natsgo.Msg{Subject: msg.Subject, Reply: msg.Reply, Header: natsgo.Header{}}
	for k, vs := range msg.Header {
		env.Header[k] = append([]string(nil), vs...)
	}
	env.Header.Set(HeaderRef, v.Ref.String())
	addTraceHeaders(env.Header, th)
	ack, err := p.js.PublishMsg(ctx, env, opts...)
	if err != nil {
		if m != nil {
			m.publishFailures.WithLabelValues(msg.Subject).Inc()
		}
		return nil, p.dropOrphan(ctx, msg.Subject, *v.Ref, err)
	}
	if m != nil {
		m.published.WithLabelValues(msg.Subject, "offloaded").Inc()
		m.publishedBytes.WithLabelValues(msg.Subject, "offloaded").Add(float64(len(msg.Data)))
	}
	return ack, nil
}

// dropOrphan deletes the claim of a publish that failed and returns the
// publish error, joined with the delete's error if that failed too (the
// claim then ends at its max_age deadline).
func (p *Publisher) dropOrphan(ctx context.Context, subject string, ref claimcheck.Ref, pubErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := p.claims.Delete(ctx, ref); err != nil {
		return errors.Join(
			fmt.Errorf("publish to %s: %w", subject, pubErr),
			fmt.Errorf("delete claim %s of the failed publish (it ends at max_age): %w", ref.ID, err))
	}
	if p.cfg.Metrics != nil {
		p.cfg.Metrics.orphansDeleted.WithLabelValues(subject).Inc()
	}
	return fmt.Errorf("publish to %s (claim %s deleted): %w", subject, ref.ID, pubErr)
}
