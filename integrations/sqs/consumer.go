package sqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/claimcheck/claimcheck"
)

// settleTimeout bounds the delete, release or visibility change of a
// message whose handler has run.
const settleTimeout = 30 * time.Second

// Message is a received message with its payload resolved.
type Message struct {
	// Msg is the SQS message as received (for an offloaded body, its Body
	// is the reference and its AttrRef attribute holds it too).
	Msg sqstypes.Message
	// Body is the payload: the message's body, the claim's verified
	// bytes, or the object an Extended Client pointer names. Empty when
	// Err is set.
	Body string
	// Attributes are the message attributes: the message's own, or, for a
	// notification the consumer unwrapped (ConsumerConfig.SNSEnvelope), those the
	// publisher gave the notification.
	Attributes map[string]sqstypes.MessageAttributeValue
	// Ref is the claim reference of an offloaded message, nil otherwise.
	Ref *claimcheck.Ref
	// Pointer is the Extended Client pointer the body was read from, nil
	// otherwise.
	Pointer *Pointer
	// Err is set when the payload can never be read: the claim is gone
	// (errors.Is(Err, claimcheck.ErrGone); errors.As gives the
	// *claimcheck.GoneError with its Reason), unknown or corrupt, the
	// reference is malformed, or the pointer's object is missing. The
	// handler is called so that it can record the loss; the message then
	// goes where ConsumerConfig.OnGone says, whatever the handler returns.
	Err error
}

// Handler processes one message. Returning nil deletes the message (and
// then releases its claim); returning an error leaves it to the queue's
// visibility timeout, for redelivery.
type Handler func(ctx context.Context, m *Message) error

// Outcome is what the consumer did with a message.
type Outcome string

// The outcomes of Handle and Poll.
const (
	Acked        Outcome = "acked"         // handler succeeded; deleted, then the claim released
	Nakked       Outcome = "nakked"        // handler, store or delete failed; redelivered after the visibility timeout
	Terminated   Outcome = "terminated"    // the payload cannot be read; the handler was told and the message deleted
	DeadLettered Outcome = "dead_lettered" // as Terminated, but left to the queue's redrive policy
)

// OnGone says where a message whose payload can never be read goes.
type OnGone int

const (
	// TerminateGone (the default): the handler is told (Message.Err), the
	// message is deleted, and Handle returns the error, which Run logs.
	TerminateGone OnGone = iota
	// RedriveGone: the handler is told and the message is made visible
	// again at once and never deleted, so that the queue's redrive policy
	// moves it to its dead-letter queue after maxReceiveCount receives.
	// NewConsumer refuses a queue without a redrive policy, where the
	// message would cycle until the queue's retention period dropped it.
	RedriveGone
)

// ConsumerConfig configures a Consumer.
type ConsumerConfig struct {
	// Name is the consumer name releases are recorded under (default: the
	// queue's name). With fan-out by ConsumerNames it must be one of them.
	Name string
	// OnGone says where a message whose payload can never be read goes.
	OnGone OnGone
	// VisibilityTimeout is how long a received message stays hidden; the
	// consumer extends it by this much every half of it while the handler
	// runs (default: the queue's VisibilityTimeout attribute).
	VisibilityTimeout time.Duration
	// NakDelay, when set, makes a message whose handler failed (or whose
	// claim store was unavailable) visible again after this delay instead
	// of after the rest of the visibility timeout.
	NakDelay time.Duration
	// MaxMessages is how many messages Poll receives at once, 1 to 10
	// (default 10).
	MaxMessages int32
	// WaitTime is the long-poll wait of a receive, at most 20s (default
	// 20s).
	WaitTime time.Duration
	// SNSEnvelope unwraps SNS notifications: for a queue subscribed to a
	// topic without raw message delivery, the body is the notification's
	// JSON and the published message and attributes are inside it. A body
	// that is not a notification is read as it is, so a queue with raw
	// and non-raw subscriptions works too. Without it the consumer still
	// unwraps a notification of an offloaded message (one carrying
	// AttrRef, delivered without attributes of its own; ADR 0275), whose
	// claim would otherwise never be released by this queue; other
	// notifications reach the handler as their JSON.
	SNSEnvelope bool
	// S3 reads the payloads of Extended Client pointers. A pointer message
	// received without it is left for redelivery (and the error logged),
	// not dropped. With S3, PointerSources is required.
	S3 S3API
	// PointerSources are the buckets (and key prefixes) whose objects
	// pointers may name (ADR 0272). Whoever can send to the queue writes
	// the pointer, and the consumer reads with its own credentials: a
	// pointer anywhere else, or with a key that is not a plain object key,
	// is terminal (Message.Err matches ErrPointerNotAllowed) and its
	// object is never read or deleted.
	PointerSources []PointerSource
	// DeletePointerObjects deletes a pointer's S3 object once its message
	// was deleted (off by default: with several consumers of one object,
	// the first would break the others). Only objects in PointerSources,
	// and never one named like a claimcheck store's own object (which the
	// store deletes when its claim is finished).
	DeletePointerObjects bool
	// Metrics receives the consumer's metrics (nil: none).
	Metrics *Metrics
	// Logger receives errors of messages handled by Run (default
	// slog.Default()).
	Logger *slog.Logger
}

// Consumer receives from one SQS queue, resolves claim-check envelopes
// and Extended Client pointers, and settles each message: delete and
// release, leave for redelivery, or give up as OnGone says.
type Consumer struct {
	claims  claimcheck.Claims
	client  SQSAPI
	url     string
	queue   string
	handler Handler
	cfg     ConsumerConfig
}

// NewConsumer returns a consumer of the queue at queueURL. It reads the
// queue's visibility timeout and redrive policy, so a queue that does not
// exist fails here.
func NewConsumer(ctx context.Context, claims claimcheck.Claims, client SQSAPI, queueURL string, handler Handler, cfg ConsumerConfig) (*Consumer, error) {
	if claims == nil || client == nil || handler == nil || queueURL == "" {
		return nil, fmt.Errorf("sqs consumer: %w: claims, client, queue URL and handler are required", claimcheck.ErrInvalidArgument)
	}
	queue := queueName(queueURL)
	if cfg.Name == "" {
		cfg.Name = queue
	}
	switch {
	case cfg.MaxMessages == 0:
		cfg.MaxMessages = 10
	case cfg.MaxMessages < 1 || cfg.MaxMessages > 10:
		return nil, fmt.Errorf("sqs consumer %s: %w: MaxMessages %d (want 1 to 10)", cfg.Name, claimcheck.ErrInvalidArgument, cfg.MaxMessages)
	}
	switch {
	case cfg.WaitTime == 0:
		cfg.WaitTime = 20 * time.Second
	case cfg.WaitTime < 0 || cfg.WaitTime > 20*time.Second:
		return nil, fmt.Errorf("sqs consumer %s: %w: WaitTime %s (want 0 to 20s)", cfg.Name, claimcheck.ErrInvalidArgument, cfg.WaitTime)
	}
	if cfg.S3 != nil && len(cfg.PointerSources) == 0 {
		return nil, fmt.Errorf("sqs consumer %s: %w: S3 is set and PointerSources is empty: name the buckets pointers may point into", cfg.Name, claimcheck.ErrInvalidArgument)
	}
	if err := checkPointerSources(cfg.PointerSources); err != nil {
		return nil, fmt.Errorf("sqs consumer %s: %w", cfg.Name, err)
	}
	if cfg.VisibilityTimeout < 0 || cfg.NakDelay < 0 {
		return nil, fmt.Errorf("sqs consumer %s: %w: VisibilityTimeout and NakDelay must not be negative", cfg.Name, claimcheck.ErrInvalidArgument)
	}
	attrs, err := client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout, sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return nil, fmt.Errorf("sqs consumer %s: attributes of %s: %w", cfg.Name, queueURL, err)
	}
	if cfg.VisibilityTimeout == 0 {
		s, err := strconv.Atoi(attrs.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)])
		if err != nil || s <= 0 {
			s = 30 // the service's default
		}
		cfg.VisibilityTimeout = time.Duration(s) * time.Second
	}
	if cfg.VisibilityTimeout < time.Second {
		return nil, fmt.Errorf("sqs consumer %s: %w: VisibilityTimeout %s (want at least 1s)", cfg.Name, claimcheck.ErrInvalidArgument, cfg.VisibilityTimeout)
	}
	if cfg.OnGone == RedriveGone && attrs.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)] == "" {
		return nil, fmt.Errorf("sqs consumer %s: %w: OnGone is RedriveGone but queue %s has no RedrivePolicy (its messages would cycle until dropped)",
			cfg.Name, claimcheck.ErrInvalidArgument, queue)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Consumer{claims: claims, client: client, url: queueURL, queue: queue, handler: handler, cfg: cfg}, nil
}

// Name is the consumer name releases are recorded under.
func (c *Consumer) Name() string { return c.cfg.Name }

// Run polls and handles messages until ctx ends, then returns nil. Errors
// of single messages go to the logger (the messages are settled as Handle
// describes); a failed receive is logged and retried after a second.
func (c *Consumer) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if _, err := c.Poll(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.ErrorContext(ctx, "claimcheck sqs: receive failed", "queue", c.queue, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// Result is what Poll did with one message.
type Result struct {
	MessageID string
	Outcome   Outcome
	Err       error // the handler's, the store's or the service's; nil if all went well
}

// Poll receives up to MaxMessages messages (waiting up to WaitTime for
// the first), handles them concurrently and settles them together: one
// DeleteMessageBatch for those to delete, then a release for each entry
// the service confirmed. An entry whose delete failed is not released
// (Outcome Nakked): its redelivery finds the claim. The error is the
// receive's; each message's is in its Result (and logged).
func (c *Consumer) Poll(ctx context.Context) ([]Result, error) {
	out, err := c.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(c.url),
		MaxNumberOfMessages:         c.cfg.MaxMessages,
		WaitTimeSeconds:             int32(c.cfg.WaitTime / time.Second),
		VisibilityTimeout:           int32(c.cfg.VisibilityTimeout / time.Second),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", c.queue, err)
	}
	results := c.handle(ctx, out.Messages)
	for i, r := range results {
		if r.Err != nil {
			c.cfg.Logger.ErrorContext(ctx, "claimcheck sqs: message not handled cleanly",
				"queue", c.queue, "consumer", c.cfg.Name, "message_id", aws.ToString(out.Messages[i].MessageId), "outcome", r.Outcome, "err", r.Err)
		}
	}
	return results, nil
}

// Handle resolves msg (received with MessageAttributeNames "All"), runs
// the handler and settles the message:
//   - the handler returned nil: DeleteMessage, then release the claim as
//     this consumer (or delete the pointer's object, if configured);
//   - the handler returned an error: leave the message to its visibility
//     timeout (or NakDelay); the redelivery resolves again;
//   - the payload can never be read (Message.Err): the handler is told,
//     then OnGone decides;
//   - the store is unavailable: leave the message without running the
//     handler.
//
// While the handler runs, the message's visibility is extended. The
// outcome says what happened; the error is the handler's, the store's or
// the service's.
func (c *Consumer) Handle(ctx context.Context, msg sqstypes.Message) (Outcome, error) {
	r := c.handle(ctx, []sqstypes.Message{msg})[0]
	return r.Outcome, r.Err
}

// pending is a message being handled.
type pending struct {
	msg     sqstypes.Message
	m       *Message
	stop    func() // ends the visibility extension (idempotent); before any other visibility change
	out     Outcome
	err     error
	del     bool // to delete
	release bool // once deleted, release the claim or the pointer's object
}

func (c *Consumer) handle(ctx context.Context, msgs []sqstypes.Message) []Result {
	ps := make([]*pending, len(msgs))
	var wg sync.WaitGroup
	for i, msg := range msgs {
		p := &pending{msg: msg, stop: c.keepVisible(ctx, msg)}
		ps[i] = p
		wg.Go(func() { c.run(ctx, p) })
	}
	wg.Wait()
	// The handlers have run: settle even if ctx ends now, or their work
	// would be done again for nothing.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	c.deleteAll(sctx, ps)
	results := make([]Result, len(ps))
	for i, p := range ps {
		p.stop()
		if p.del && p.err == nil && p.release {
			p.err = c.releaseOne(sctx, p.m)
		}
		c.count(p.out)
		results[i] = Result{MessageID: aws.ToString(p.msg.MessageId), Outcome: p.out, Err: p.err}
	}
	return results
}

// run resolves and handles one message and decides its outcome.
func (c *Consumer) run(ctx context.Context, p *pending) {
	m, err := c.Resolve(ctx, p.msg)
	if err != nil {
		c.resolveError(err)
		p.stop() // the visibility is nak's to set now
		p.out, p.err = c.nak(ctx, p.msg, fmt.Errorf("resolve: %w", err))
		return
	}
	p.m = m
	hctx := traceContext(ctx, func(name string) (string, bool) {
		v, ok := m.Attributes[name]
		return aws.ToString(v.StringValue), ok && v.StringValue != nil
	})
	herr := c.handler(hctx, m)
	switch {
	case m.Err != nil:
		c.resolveError(m.Err)
		if c.cfg.OnGone == RedriveGone {
			p.stop()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
			defer cancel()
			p.out, p.err = DeadLettered, m.Err
			if err := c.setVisibility(sctx, p.msg, 0); err != nil {
				p.err = errors.Join(m.Err, err)
			}
			return
		}
		p.out, p.err, p.del = Terminated, m.Err, true
	case herr != nil:
		p.stop()
		p.out, p.err = c.nak(ctx, p.msg, herr)
	default:
		p.out, p.del, p.release = Acked, true, true
	}
}

// Resolve reads the payload of msg. A payload that can never be read is
// reported in Message.Err; an error that a retry may cure (the store or
// S3 is unavailable, ctx ended, no S3 client for a pointer) is returned.
func (c *Consumer) Resolve(ctx context.Context, msg sqstypes.Message) (*Message, error) {
	m := &Message{Msg: msg, Body: aws.ToString(msg.Body), Attributes: msg.MessageAttributes}
	if body, attrs, ok := c.notification(msg); ok {
		m.Body, m.Attributes = body, attrs
	}
	if v, ok := m.Attributes[AttrRef]; ok {
		ref, err := claimcheck.ParseRef([]byte(aws.ToString(v.StringValue)))
		if err != nil {
			m.Body, m.Err = "", fmt.Errorf("%s attribute: %w", AttrRef, err)
			return m, nil
		}
		m.Ref = &ref
		body, err := claimcheck.Resolve(ctx, c.claims, claimcheck.Value{Ref: &ref})
		switch {
		case err == nil:
			m.Body = string(body)
		case claimcheck.Permanent(err):
			m.Body, m.Err = "", err
		default:
			return nil, err
		}
		return m, nil
	}
	ptr, err := pointerOf(m.Body, m.Attributes)
	if err != nil {
		m.Body, m.Err = "", err
		return m, nil
	}
	if ptr == nil {
		return m, nil
	}
	m.Pointer = ptr
	if err := allowPointer(c.cfg.PointerSources, *ptr); c.cfg.S3 != nil && err != nil {
		m.Body, m.Err = "", err
		return m, nil
	}
	if c.cfg.S3 == nil {
		return nil, fmt.Errorf("%w: the message is an S3 pointer (s3://%s/%s) and ConsumerConfig.S3 is not set", claimcheck.ErrUnavailable, ptr.Bucket, ptr.Key)
	}
	body, err := readPointer(ctx, c.cfg.S3, *ptr)
	switch {
	case err == nil:
		m.Body = body
	case claimcheck.Permanent(err):
		m.Body, m.Err = "", err
	default:
		return nil, err
	}
	return m, nil
}

// notification returns the published message and attributes inside msg
// when msg is an SNS notification the consumer unwraps (ADR 0275): any
// notification with SNSEnvelope; without it, only one that cannot be
// anything else's: the SQS message has no attributes of its own (a
// subscription without raw message delivery puts them all inside the
// notification) and the notification carries AttrRef. Otherwise its
// handler would get the notification's JSON as the payload, the message
// would be deleted, and the claim never released under this consumer's
// name. A notification without AttrRef stays as it is: that is what a
// plain SNS subscriber receives.
func (c *Consumer) notification(msg sqstypes.Message) (string, map[string]sqstypes.MessageAttributeValue, bool) {
	body, attrs, ok := unwrapNotification(aws.ToString(msg.Body))
	if !ok || c.cfg.SNSEnvelope {
		return body, attrs, ok
	}
	if len(msg.MessageAttributes) > 0 {
		return "", nil, false
	}
	if _, ref := attrs[AttrRef]; !ref {
		return "", nil, false
	}
	return body, attrs, true
}

// nak leaves msg for redelivery: after NakDelay if set, else after the
// rest of its visibility timeout.
func (c *Consumer) nak(ctx context.Context, msg sqstypes.Message, cause error) (Outcome, error) {
	if c.cfg.NakDelay > 0 {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
		if err := c.setVisibility(sctx, msg, c.cfg.NakDelay); err != nil {
			return Nakked, errors.Join(cause, err)
		}
	}
	return Nakked, cause
}

// deleteAll deletes the messages marked for it: DeleteMessage for one,
// DeleteMessageBatch for several. A message whose delete failed becomes
// Nakked and is not released.
func (c *Consumer) deleteAll(ctx context.Context, ps []*pending) {
	var del []*pending
	for _, p := range ps {
		if p.del {
			del = append(del, p)
		}
	}
	fail := func(p *pending, err error) {
		p.del, p.out = false, Nakked
		p.err = errors.Join(p.err, fmt.Errorf("delete message %s (it will be redelivered; claim not released): %w", aws.ToString(p.msg.MessageId), err))
	}
	switch len(del) {
	case 0:
		return
	case 1:
		_, err := c.client.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(c.url), ReceiptHandle: del[0].msg.ReceiptHandle})
		if err != nil {
			fail(del[0], err)
		}
		return
	}
	entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(del))
	for i, p := range del {
		entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: p.msg.ReceiptHandle}
	}
	out, err := c.client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(c.url), Entries: entries})
	if err != nil {
		for _, p := range del {
			fail(p, err)
		}
		return
	}
	done := map[string]bool{}
	for _, s := range out.Successful {
		done[aws.ToString(s.Id)] = true
	}
	for _, f := range out.Failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err == nil && i >= 0 && i < len(del) {
			fail(del[i], fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message)))
			done[aws.ToString(f.Id)] = true
		}
	}
	// An entry the service answered neither way is not known to be
	// deleted: treat it as failed, so its claim stays.
	for i, p := range del {
		if !done[strconv.Itoa(i)] {
			fail(p, errors.New("no result for the entry"))
		}
	}
}

// releaseOne releases the claim of a deleted message as this consumer, or
// deletes its pointer's object when so configured. A claim already gone
// is fine (it ended on its own, e.g. delete_after_read).
func (c *Consumer) releaseOne(ctx context.Context, m *Message) error {
	switch {
	case m.Ref != nil:
		err := c.claims.Release(ctx, *m.Ref, c.cfg.Name)
		if err != nil && !errors.Is(err, claimcheck.ErrGone) {
			if c.cfg.Metrics != nil {
				c.cfg.Metrics.releaseFailures.WithLabelValues(c.queue, c.cfg.Name).Inc()
			}
			return fmt.Errorf("release claim %s as %s: %w", m.Ref.ID, c.cfg.Name, err)
		}
	case m.Pointer != nil && c.cfg.DeletePointerObjects && m.Err == nil:
		if storeOwnedKey(m.Pointer.Key) {
			// The object is a claimcheck store's: the store deletes it
			// when its claim is finished, and another consumer may read
			// it until then.
			c.cfg.Logger.Warn("sqs consumer: not deleting a pointer's object named like a claimcheck store's own",
				"consumer", c.cfg.Name, "bucket", m.Pointer.Bucket, "key", m.Pointer.Key)
			return nil
		}
		_, err := c.cfg.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(m.Pointer.Bucket), Key: aws.String(m.Pointer.Key)})
		if err != nil {
			return fmt.Errorf("delete s3://%s/%s after its message: %w", m.Pointer.Bucket, m.Pointer.Key, err)
		}
	}
	return nil
}

// keepVisible extends msg's visibility every half VisibilityTimeout
// until the returned stop is called. A failed extension is logged: the
// message may then be delivered twice, which the retention window
// covers.
func (c *Consumer) keepVisible(ctx context.Context, msg sqstypes.Message) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(c.cfg.VisibilityTimeout / 2)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := c.setVisibility(context.WithoutCancel(ctx), msg, c.cfg.VisibilityTimeout); err != nil {
					c.cfg.Logger.WarnContext(ctx, "claimcheck sqs: visibility not extended",
						"queue", c.queue, "message_id", aws.ToString(msg.MessageId), "err", err)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-stopped
	}
}

func (c *Consumer) setVisibility(ctx context.Context, msg sqstypes.Message, d time.Duration) error {
	_, err := c.client.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(c.url), ReceiptHandle: msg.ReceiptHandle, VisibilityTimeout: int32(d / time.Second),
	})
	if err != nil {
		return fmt.Errorf("change visibility of message %s: %w", aws.ToString(msg.MessageId), err)
	}
	return nil
}

func (c *Consumer) count(out Outcome) {
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.consumed.WithLabelValues(c.queue, c.cfg.Name, string(out)).Inc()
	}
}

func (c *Consumer) resolveError(err error) {
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.resolveErrors.WithLabelValues(c.queue, c.cfg.Name, claimcheck.ResolveFailure(err)).Inc()
	}
}
