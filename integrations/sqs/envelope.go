package sqs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Attribute names of the envelope.
const (
	// AttrRef carries the claim reference (its JSON, at most
	// claimcheck.MaxRefSize bytes) of an offloaded body, as a String
	// message attribute. A message without it is an inline message (or an
	// Extended Client pointer): its body is the payload.
	AttrRef = "Claimcheck-Ref"
)

// The services' limits the envelope works within.
const (
	// SQSMaxMessageSize is the largest SQS message, body and attributes
	// together (1 MiB).
	SQSMaxMessageSize = 1 << 20
	// SNSMaxMessageSize is the largest SNS publish the envelope assumes by
	// default (256 KiB); PublisherConfig.MaxMessageSize raises it.
	SNSMaxMessageSize = 256 << 10
	// MaxAttributes is how many message attributes SQS and SNS accept on
	// one message.
	MaxAttributes = 10
)

// cleanupTimeout bounds the deletion of an orphaned claim after a failed
// send; it runs even when the caller's context is what failed.
const cleanupTimeout = 30 * time.Second

// PublisherConfig configures a Publisher or a TopicPublisher.
type PublisherConfig struct {
	// Namespace is the claimcheck namespace bodies are stored in
	// (required). NewPublisher reads its policy once, so a namespace the
	// store does not know fails there, not on the first message.
	Namespace string
	// Threshold, when set, offloads every body of at least this many
	// bytes. Zero offloads only what would not fit MaxMessageSize
	// together with its message attributes.
	Threshold claimcheck.Size
	// MaxMessageSize is the size limit of one message, body and
	// attributes together, as the service counts it (default
	// SQSMaxMessageSize for a Publisher, SNSMaxMessageSize for a
	// TopicPublisher). Set it lower for a queue whose
	// MaximumMessageSize is lower.
	MaxMessageSize claimcheck.Size
	// Consumers is the number of distinct consumers that must delete an
	// offloaded message before its claim is finished: for a topic, the
	// number of queues subscribed to it. 0 means 1.
	Consumers int
	// ConsumerNames, when set, names the consumers whose releases count
	// (by default a Consumer releases under its queue's name); Consumers
	// is then its length. A consumer not named cannot release the claim.
	ConsumerNames []string
	// ContentType is stored with every claim this publisher creates.
	ContentType string
	// Labels are stored with every claim this publisher creates.
	Labels map[string]string
	// ExtendedClient, when set, makes offloaded messages readable by
	// consumers still on a stock Amazon SQS Extended Client library: the
	// body is the library's S3 pointer to the claim's object and the size
	// attribute is set, beside AttrRef (docs/adr/0245).
	ExtendedClient *ExtendedClientConfig
	// Metrics receives the publisher's metrics (nil: none).
	Metrics *Metrics
}

// ExtendedClientConfig describes where the claimcheck store keeps its
// objects, for pointers stock Extended Client consumers follow. The
// store's blob storage must be this S3 bucket, and Namespace must store
// payloads as they are (compression: none, no encryption), so that the
// claim's object is the payload; the store deletes it when the claim is
// finished, never before.
type ExtendedClientConfig struct {
	// Bucket is the S3 bucket of the store's blob storage (required):
	// the bucket of its storage URL, s3://BUCKET?…, whose object keys are
	// the ones Stat reports.
	Bucket string
	// LegacyAttribute names the size SQSLargePayloadSize, for consumers on
	// the first Java library, instead of ExtendedPayloadSize.
	LegacyAttribute bool
	// LegacyClass writes the first Java library's pointer class name
	// (LegacyPointerClass) instead of PointerClass.
	LegacyClass bool
}

// envelope is what the SQS and the SNS publisher share: the decision to
// offload, the put, and the deletion of a claim whose send failed.
type envelope struct {
	claims    claimcheck.Claims
	cfg       PublisherConfig
	threshold int64
	maxSize   int64
	kind      string // "sqs publisher" or "sns publisher", for errors
}

func newEnvelope(ctx context.Context, kind string, claims claimcheck.Claims, cfg PublisherConfig, defaultMax int64) (*envelope, error) {
	if claims == nil {
		return nil, fmt.Errorf("%s: %w: claims is required", kind, claimcheck.ErrInvalidArgument)
	}
	if err := claimcheck.ValidateNamespace(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("%s: namespace: %w", kind, err)
	}
	if cfg.Threshold < 0 {
		return nil, fmt.Errorf("%s: %w: threshold %d is negative", kind, claimcheck.ErrInvalidArgument, cfg.Threshold)
	}
	if cfg.MaxMessageSize < 0 {
		return nil, fmt.Errorf("%s: %w: max message size %d is negative", kind, claimcheck.ErrInvalidArgument, cfg.MaxMessageSize)
	}
	if cfg.Consumers < 0 {
		return nil, fmt.Errorf("%s: %w: consumers %d is negative", kind, claimcheck.ErrInvalidArgument, cfg.Consumers)
	}
	pol, err := claims.Policy(ctx, cfg.Namespace)
	if err != nil {
		return nil, fmt.Errorf("%s: policy of %s: %w", kind, cfg.Namespace, err)
	}
	if x := cfg.ExtendedClient; x != nil {
		if x.Bucket == "" {
			return nil, fmt.Errorf("%s: %w: ExtendedClient.Bucket is required", kind, claimcheck.ErrInvalidArgument)
		}
		if pol.Compression != claimcheck.CompressionNone || pol.Encrypted() {
			return nil, fmt.Errorf("%s: %w: namespace %s has compression %q and encryption %q; Extended Client pointers need compression: none and no encryption (the object must be the payload as it is)",
				kind, claimcheck.ErrInvalidArgument, cfg.Namespace, pol.Compression, pol.Encryption)
		}
	}
	maxSize := int64(cfg.MaxMessageSize)
	if maxSize == 0 {
		maxSize = defaultMax
	}
	return &envelope{claims: claims, cfg: cfg, threshold: int64(cfg.Threshold), maxSize: maxSize, kind: kind}, nil
}

// offloads reports whether a body of n bytes, sent with attributes of
// attrBytes bytes (as the service counts them), goes to the store.
func (e *envelope) offloads(n, attrBytes int64) bool {
	return (e.threshold > 0 && n >= e.threshold) || n+attrBytes > e.maxSize
}

// put stores body in a claim.
func (e *envelope) put(ctx context.Context, body string) (claimcheck.Ref, error) {
	v, err := claimcheck.OffloadAt(ctx, e.claims, e.cfg.Namespace, []byte(body), 0, claimcheck.PutOptions{
		ContentType: e.cfg.ContentType, Labels: e.cfg.Labels,
		Consumers: e.cfg.Consumers, ConsumerNames: e.cfg.ConsumerNames,
	})
	if err != nil {
		return claimcheck.Ref{}, fmt.Errorf("offload: %w", err)
	}
	return *v.Ref, nil
}

// dropOrphan deletes the claim of a send that failed and returns the send
// error, joined with the delete's error if that failed too (the claim
// then ends at its max_age deadline). docs/adr/0040.
func (e *envelope) dropOrphan(ctx context.Context, dest string, ref claimcheck.Ref, sendErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := e.claims.Delete(ctx, ref); err != nil {
		return errors.Join(
			fmt.Errorf("send to %s: %w", dest, sendErr),
			fmt.Errorf("delete claim %s of the failed send (it ends at max_age): %w", ref.ID, err))
	}
	if e.cfg.Metrics != nil {
		e.cfg.Metrics.orphansDeleted.WithLabelValues(dest).Inc()
	}
	return fmt.Errorf("send to %s (claim %s deleted): %w", dest, ref.ID, sendErr)
}

func (e *envelope) published(dest, mode string, n int) {
	if m := e.cfg.Metrics; m != nil {
		m.published.WithLabelValues(dest, mode).Inc()
		m.publishedBytes.WithLabelValues(dest, mode).Add(float64(n))
	}
}

func (e *envelope) failed(dest string) {
	if m := e.cfg.Metrics; m != nil {
		m.publishFailures.WithLabelValues(dest).Inc()
	}
}

// wrap decides whether body is offloaded and returns the message's body
// and attributes: the reference (and AttrRef) for an offloaded body, the
// body itself otherwise, plus the trace context. V is the service's
// attribute type; str makes a String attribute, size counts one as the
// service does.
func wrap[V any](ctx context.Context, e *envelope, service, body string, attrs map[string]V,
	attr func(dataType, value string) V, size func(string, V) int64) (string, map[string]V, *claimcheck.Ref, error) {
	str := func(s string) V { return attr("String", s) }
	if _, ok := attrs[AttrRef]; ok {
		return "", nil, nil, fmt.Errorf("%w: the message already has a %s attribute", claimcheck.ErrInvalidArgument, AttrRef)
	}
	out := maps.Clone(attrs)
	if out == nil {
		out = map[string]V{}
	}
	for k, v := range traceFields(ctx) {
		// One attribute stays free for the reference.
		if _, taken := out[k]; !taken && len(out) < MaxAttributes-1 {
			out[k] = str(v)
		}
	}
	var n int64
	for k, v := range out {
		n += size(k, v)
	}
	if !e.offloads(int64(len(body)), n) {
		return body, out, nil, nil
	}
	need := 1 // AttrRef
	if e.cfg.ExtendedClient != nil {
		need = 2 // and the size attribute
	}
	if len(out)+need > MaxAttributes {
		return "", nil, nil, fmt.Errorf("%w: the message has %d attributes and %s allows %d; the claim reference needs %d",
			claimcheck.ErrInvalidArgument, len(out), service, MaxAttributes, need)
	}
	ref, err := e.put(ctx, body)
	if err != nil {
		return "", nil, nil, err
	}
	s := ref.String()
	out[AttrRef] = str(s)
	if e.cfg.ExtendedClient == nil {
		return s, out, &ref, nil
	}
	ptr, sizeAttr, err := e.pointer(ctx, ref)
	if err != nil {
		// Nothing was sent: the claim must not outlive this call.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := e.claims.Delete(dctx, ref); derr != nil {
			return "", nil, nil, errors.Join(err, fmt.Errorf("delete claim %s (it ends at max_age): %w", ref.ID, derr))
		}
		return "", nil, nil, fmt.Errorf("%w (claim %s deleted)", err, ref.ID)
	}
	out[sizeAttr] = attr("Number", strconv.FormatInt(ptr.Size, 10))
	return ptr.MarshalBody(), out, &ref, nil
}

// pointer returns the Extended Client pointer to ref's object and the
// name of the size attribute to send with it.
func (e *envelope) pointer(ctx context.Context, ref claimcheck.Ref) (Pointer, string, error) {
	x := e.cfg.ExtendedClient
	info, err := e.claims.Stat(ctx, ref)
	if err != nil {
		return Pointer{}, "", fmt.Errorf("stat claim %s for its object: %w", ref.ID, err)
	}
	if info.Object == "" {
		return Pointer{}, "", fmt.Errorf("claim %s: %w: its object is not the payload as it is (stored compressed or encrypted), so no S3 pointer can name it", ref.ID, claimcheck.ErrInvalidArgument)
	}
	p := Pointer{Class: PointerClass, Bucket: x.Bucket, Key: info.Object, Size: ref.Size}
	if x.LegacyClass {
		p.Class = LegacyPointerClass
	}
	name := AttrPayloadSize
	if x.LegacyAttribute {
		name = AttrLegacyPayloadSize
	}
	return p, name, nil
}

// attrSize is how SQS and SNS count one message attribute: its name, its
// data type and its value.
func attrSize(name, dataType string, str *string, bin []byte) int64 {
	n := int64(len(name) + len(dataType) + len(bin))
	if str != nil {
		n += int64(len(*str))
	}
	return n
}
