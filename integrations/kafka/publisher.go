package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"

	"github.com/claimcheck/claimcheck"
)

// Header keys of the envelope (Kafka header keys are case-sensitive).
const (
	// HeaderRef carries the claim reference (its JSON, at most
	// claimcheck.MaxRefSize bytes) of an offloaded value. A record without
	// it is inline: its value is the payload.
	HeaderRef = "Claimcheck-Ref"
	// HeaderError is set on a dead-lettered record: why its reference
	// could not be resolved.
	HeaderError = "Claimcheck-Error"
	// HeaderGoneReason is set on a dead-lettered record whose claim was
	// gone: the claimcheck.GoneReason (expired, read_retention_over, ...).
	HeaderGoneReason = "Claimcheck-Gone-Reason"
	// HeaderTopic is set on a dead-lettered record: the topic it was
	// consumed from.
	HeaderTopic = "Claimcheck-Topic"
)

// cleanupTimeout bounds the deletion of an orphaned claim after a failed
// produce, and the commit and releases of a handled batch; both run even
// when the caller's context is what ended.
const cleanupTimeout = 30 * time.Second

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Namespace is the claimcheck namespace values are stored in
	// (required).
	Namespace string
	// Threshold is the value size from which values are offloaded. Zero
	// means the namespace's threshold, read once by NewPublisher.
	Threshold claimcheck.Size
	// Consumers is the number of consumer groups that must commit an
	// offloaded record before its claim is finished. 0 means 1.
	Consumers int
	// ConsumerNames, when set, names the consumer groups whose commits
	// count; Consumers is then its length.
	ConsumerNames []string
	// ContentType is stored with every claim this publisher creates.
	ContentType string
	// Labels are stored with every claim this publisher creates.
	Labels map[string]string
	// Metrics receives the publisher's metrics (nil: none).
	Metrics *Metrics
	// LargeMessage, when set, writes bakdata's large-message format for
	// stock bakdata consumers (largemessage.go, ADR 0281).
	LargeMessage *LargeMessageWriter
}

// Publisher produces records through a kgo.Client, offloading large
// values. It is safe for concurrent use.
type Publisher struct {
	claims    claimcheck.Claims
	client    *kgo.Client
	cfg       PublisherConfig
	threshold int64
}

// NewPublisher returns a publisher that stores large values in claims and
// produces through client. It reads the namespace's policy once (so a
// misconfigured namespace fails here) unless cfg.Threshold is set.
func NewPublisher(ctx context.Context, claims claimcheck.Claims, client *kgo.Client, cfg PublisherConfig) (*Publisher, error) {
	if claims == nil || client == nil {
		return nil, fmt.Errorf("kafka publisher: %w: claims and client are required", claimcheck.ErrInvalidArgument)
	}
	if err := claimcheck.ValidateNamespace(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("kafka publisher: namespace: %w", err)
	}
	if cfg.Threshold < 0 || cfg.Consumers < 0 {
		return nil, fmt.Errorf("kafka publisher: %w: threshold %d and consumers %d must not be negative", claimcheck.ErrInvalidArgument, cfg.Threshold, cfg.Consumers)
	}
	threshold := int64(cfg.Threshold)
	if threshold == 0 || cfg.LargeMessage != nil {
		pol, err := claims.Policy(ctx, cfg.Namespace)
		if err != nil {
			return nil, fmt.Errorf("kafka publisher: policy of %s: %w", cfg.Namespace, err)
		}
		if threshold == 0 {
			threshold = int64(pol.Threshold)
		}
		if cfg.LargeMessage != nil {
			if err := cfg.LargeMessage.check(pol, cfg.Namespace); err != nil {
				return nil, fmt.Errorf("kafka publisher: %w", err)
			}
		}
	}
	return &Publisher{claims: claims, client: client, cfg: cfg, threshold: threshold}, nil
}

// Threshold is the value size from which this publisher offloads.
func (p *Publisher) Threshold() int64 { return p.threshold }

// Publish produces records and waits until Kafka has them. A value of at
// least the threshold is stored in a claim first and its record carries
// the reference in HeaderRef with an empty value; smaller values are
// produced unchanged. The records passed in are not modified.
//
// Every record whose produce fails has its claim deleted before Publish
// returns, so a failed produce leaves nothing behind (docs/adr/0040); the
// error joins the failures of all records. Records are offloaded in
// order; if an offload fails, nothing is produced and the claims already
// made for this call are deleted.
func (p *Publisher) Publish(ctx context.Context, records ...*kgo.Record) error {
	m := p.cfg.Metrics
	out := make([]*kgo.Record, len(records))
	refs := make([]*claimcheck.Ref, len(records))
	for i, r := range records {
		// The record's own context, if it has one, is its trace's
		// (tracecontext.go).
		rctx := ctx
		if r.Context != nil {
			rctx = r.Context
		}
		th := traceHeaders(rctx)
		if slices.ContainsFunc(r.Headers, func(h kgo.RecordHeader) bool { return h.Key == HeaderRef }) {
			return p.abort(ctx, records, refs[:i], fmt.Errorf("publish to %s: %w: the record already has a %s header", r.Topic, claimcheck.ErrInvalidArgument, HeaderRef))
		}
		v, err := claimcheck.OffloadAt(rctx, p.claims, p.cfg.Namespace, r.Value, p.threshold, claimcheck.PutOptions{
			ContentType: p.cfg.ContentType, Labels: p.cfg.Labels,
			Consumers: p.cfg.Consumers, ConsumerNames: p.cfg.ConsumerNames,
		})
		if err != nil {
			if m != nil {
				m.publishFailures.WithLabelValues(r.Topic).Inc()
			}
			return p.abort(ctx, records, refs[:i], fmt.Errorf("publish to %s: offload: %w", r.Topic, err))
		}
		refs[i] = v.Ref
		if p.cfg.LargeMessage != nil {
			if out[i], err = p.largeRecord(rctx, r, v.Ref, th); err != nil {
				return p.abort(ctx, records, refs[:i+1], fmt.Errorf("publish to %s: %w", r.Topic, err))
			}
			continue
		}
		if !v.Offloaded() {
			out[i] = withTraceContext(r, th)
			continue
		}
		out[i] = &kgo.Record{
			Topic: r.Topic, Key: r.Key, Timestamp: r.Timestamp, Partition: r.Partition, Context: r.Context,
			Headers: append(slices.Clip(r.Headers), kgo.RecordHeader{Key: HeaderRef, Value: []byte(v.Ref.String())}),
		}
		addTraceHeaders(&out[i].Headers, th)
	}

	results := p.client.ProduceSync(ctx, out...)
	var errs []error
	for i, res := range results {
		mode := "inline"
		if refs[i] != nil {
			mode = "offloaded"
		}
		if res.Err == nil {
			if m != nil {
				m.published.WithLabelValues(records[i].Topic, mode).Inc()
				m.publishedBytes.WithLabelValues(records[i].Topic, mode).Add(float64(len(records[i].Value)))
			}
			continue
		}
		if m != nil {
			m.publishFailures.WithLabelValues(records[i].Topic).Inc()
		}
		err := fmt.Errorf("publish to %s: %w", records[i].Topic, res.Err)
		if refs[i] != nil {
			err = p.dropOrphan(ctx, records[i].Topic, *refs[i], err)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// largeRecord is r in bakdata's format: flagged inline, or (ref set) the
// URI of the claim's object, with the reference beside it.
func (p *Publisher) largeRecord(ctx context.Context, r *kgo.Record, ref *claimcheck.Ref, th propagation.MapCarrier) (*kgo.Record, error) {
	w := p.cfg.LargeMessage
	flag, body := largeInline, r.Value
	if ref != nil {
		uri, err := w.objectURI(ctx, p.claims, *ref)
		if err != nil {
			return nil, err
		}
		flag, body = largeBacked, []byte(uri)
	}
	value, hs := w.encode(flag, body)
	out := &kgo.Record{Topic: r.Topic, Key: r.Key, Value: value, Timestamp: r.Timestamp, Partition: r.Partition, Context: r.Context,
		Headers: append(slices.Clip(r.Headers), hs...)}
	if ref != nil {
		out.Headers = append(out.Headers, kgo.RecordHeader{Key: HeaderRef, Value: []byte(ref.String())})
	}
	addTraceHeaders(&out.Headers, th)
	return out, nil
}

// abort deletes the claims made for a call that produces nothing.
func (p *Publisher) abort(ctx context.Context, records []*kgo.Record, refs []*claimcheck.Ref, err error) error {
	errs := []error{err}
	for i, ref := range refs {
		if ref != nil {
			if derr := p.dropOrphan(ctx, records[i].Topic, *ref, nil); derr != nil {
				errs = append(errs, derr)
			}
		}
	}
	return errors.Join(errs...)
}

// dropOrphan deletes the claim of a record that was not produced and
// returns cause, joined with the delete's error if that failed too (the
// claim then ends at its max_age deadline).
func (p *Publisher) dropOrphan(ctx context.Context, topic string, ref claimcheck.Ref, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := p.claims.Delete(ctx, ref); err != nil {
		return errors.Join(cause, fmt.Errorf("delete claim %s of the failed publish (it ends at max_age): %w", ref.ID, err))
	}
	if p.cfg.Metrics != nil {
		p.cfg.Metrics.orphansDeleted.WithLabelValues(topic).Inc()
	}
	return cause
}
