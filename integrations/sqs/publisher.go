package sqs

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/claimcheck/claimcheck"
)

// SQSAPI is the part of *sqs.Client (AWS SDK for Go v2) the envelope
// uses. Pass the client itself; tests wrap it to inject failures.
type SQSAPI interface {
	SendMessage(context.Context, *awssqs.SendMessageInput, ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error)
	SendMessageBatch(context.Context, *awssqs.SendMessageBatchInput, ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error)
	ReceiveMessage(context.Context, *awssqs.ReceiveMessageInput, ...func(*awssqs.Options)) (*awssqs.ReceiveMessageOutput, error)
	DeleteMessage(context.Context, *awssqs.DeleteMessageInput, ...func(*awssqs.Options)) (*awssqs.DeleteMessageOutput, error)
	DeleteMessageBatch(context.Context, *awssqs.DeleteMessageBatchInput, ...func(*awssqs.Options)) (*awssqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(context.Context, *awssqs.ChangeMessageVisibilityInput, ...func(*awssqs.Options)) (*awssqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(context.Context, *awssqs.GetQueueAttributesInput, ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error)
}

var _ SQSAPI = (*awssqs.Client)(nil)

// Publisher sends messages to SQS queues, offloading large bodies. It is
// safe for concurrent use.
type Publisher struct {
	*envelope
	client SQSAPI
}

// NewPublisher returns a publisher that stores large bodies in claims of
// cfg.Namespace and sends through client.
func NewPublisher(ctx context.Context, claims claimcheck.Claims, client SQSAPI, cfg PublisherConfig) (*Publisher, error) {
	if client == nil {
		return nil, fmt.Errorf("sqs publisher: %w: client is required", claimcheck.ErrInvalidArgument)
	}
	e, err := newEnvelope(ctx, "sqs publisher", claims, cfg, SQSMaxMessageSize)
	if err != nil {
		return nil, err
	}
	return &Publisher{envelope: e, client: client}, nil
}

// Send sends in. A body that reaches the threshold, or would not fit the
// message size limit with its attributes, is stored in a claim first and
// the message carries the reference in AttrRef (and as its body); a
// smaller body is sent unchanged. in is not modified.
//
// If the send fails after the body was stored, the claim is deleted
// before Send returns, so a failed send leaves nothing behind
// (docs/adr/0040). A retry is a new send with a new claim.
func (p *Publisher) Send(ctx context.Context, in *awssqs.SendMessageInput, optFns ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	dest := queueName(aws.ToString(in.QueueUrl))
	out := *in
	body, attrs, ref, err := wrap(ctx, p.envelope, "SQS", aws.ToString(in.MessageBody), in.MessageAttributes, sqsAttr, sqsAttrSize)
	if err != nil {
		p.failed(dest)
		return nil, fmt.Errorf("send to %s: %w", dest, err)
	}
	out.MessageBody, out.MessageAttributes = aws.String(body), attrs
	res, err := p.client.SendMessage(ctx, &out, optFns...)
	if err != nil {
		p.failed(dest)
		if ref != nil {
			return nil, p.dropOrphan(ctx, dest, *ref, err)
		}
		return nil, fmt.Errorf("send to %s: %w", dest, err)
	}
	p.published(dest, mode(ref), len(aws.ToString(in.MessageBody)))
	return res, nil
}

// SendBatch sends the entries of in in one SendMessageBatch, offloading
// each entry's body as Send does. Entries settle one by one: the claim of
// every entry the service reports as failed is deleted, and the output
// is the service's (Failed lists those entries). If an offload fails,
// nothing is sent and the claims already made for in are deleted. The
// batch as a whole must fit the service's batch limit: offloading looks
// at each entry alone.
func (p *Publisher) SendBatch(ctx context.Context, in *awssqs.SendMessageBatchInput, optFns ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error) {
	dest := queueName(aws.ToString(in.QueueUrl))
	out := *in
	out.Entries = make([]sqstypes.SendMessageBatchRequestEntry, len(in.Entries))
	refs := map[string]claimcheck.Ref{} // entry id → its claim
	sizes := map[string]int{}           // entry id → its body's size
	abort := func(err error) error {
		for _, ref := range refs {
			err = p.dropOrphan(ctx, dest, ref, err)
		}
		return err
	}
	for i, entry := range in.Entries {
		id := aws.ToString(entry.Id)
		sizes[id] = len(aws.ToString(entry.MessageBody))
		body, attrs, ref, err := wrap(ctx, p.envelope, "SQS", aws.ToString(entry.MessageBody), entry.MessageAttributes, sqsAttr, sqsAttrSize)
		if err != nil {
			p.failed(dest)
			return nil, abort(fmt.Errorf("send batch to %s: entry %s: %w", dest, id, err))
		}
		if ref != nil {
			refs[id] = *ref
		}
		out.Entries[i] = entry
		out.Entries[i].MessageBody, out.Entries[i].MessageAttributes = aws.String(body), attrs
	}
	res, err := p.client.SendMessageBatch(ctx, &out, optFns...)
	if err != nil {
		p.failed(dest)
		return nil, abort(fmt.Errorf("send batch to %s: %w", dest, err))
	}
	for _, f := range res.Failed {
		p.failed(dest)
		id := aws.ToString(f.Id)
		if ref, ok := refs[id]; ok {
			delete(refs, id)
			// The entry's failure is in res.Failed; a claim that cannot be
			// deleted now ends at its max_age deadline.
			_ = p.dropOrphan(ctx, dest, ref, fmt.Errorf("entry %s: %s: %s", id, aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	for _, s := range res.Successful {
		id := aws.ToString(s.Id)
		_, offloaded := refs[id]
		mode := "inline"
		if offloaded {
			mode = "offloaded"
		}
		p.published(dest, mode, sizes[id])
	}
	return res, nil
}

func sqsAttr(dataType, s string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String(dataType), StringValue: aws.String(s)}
}

func sqsAttrSize(name string, v sqstypes.MessageAttributeValue) int64 {
	return attrSize(name, aws.ToString(v.DataType), v.StringValue, v.BinaryValue)
}

func mode(ref *claimcheck.Ref) string {
	if ref != nil {
		return "offloaded"
	}
	return "inline"
}

// queueName is the last path segment of a queue URL (its name), used as
// the metrics label and the default consumer name.
func queueName(url string) string {
	for i := len(url) - 1; i >= 0; i-- {
		if url[i] == '/' {
			return url[i+1:]
		}
	}
	return url
}
