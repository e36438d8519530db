package sqs

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/claimcheck/claimcheck"
)

// SNSAPI is the part of *sns.Client (AWS SDK for Go v2) a TopicPublisher
// uses.
type SNSAPI interface {
	Publish(context.Context, *awssns.PublishInput, ...func(*awssns.Options)) (*awssns.PublishOutput, error)
}

var _ SNSAPI = (*awssns.Client)(nil)

// TopicPublisher publishes messages to SNS topics, offloading large
// bodies. Every queue subscribed to the topic gets the reference; set
// PublisherConfig.Consumers to the number of subscribed queues (or
// ConsumerNames to their consumers' names) so that the claim lives until
// the last of them has deleted its copy. Raw message delivery may be on
// or off for each subscription: a Consumer reads the reference from the
// notification's attributes (ADR 0275; with SNSEnvelope set it also
// unwraps the notifications of inline messages). It is safe for
// concurrent use.
type TopicPublisher struct {
	*envelope
	client SNSAPI
}

// NewTopicPublisher returns a publisher that stores large bodies in
// claims of cfg.Namespace and publishes through client. Its default
// MaxMessageSize is SNSMaxMessageSize.
func NewTopicPublisher(ctx context.Context, claims claimcheck.Claims, client SNSAPI, cfg PublisherConfig) (*TopicPublisher, error) {
	if client == nil {
		return nil, fmt.Errorf("sns publisher: %w: client is required", claimcheck.ErrInvalidArgument)
	}
	e, err := newEnvelope(ctx, "sns publisher", claims, cfg, SNSMaxMessageSize)
	if err != nil {
		return nil, err
	}
	return &TopicPublisher{envelope: e, client: client}, nil
}

// Publish publishes in, offloading its Message as Publisher.Send does
// for a body; a failed publish deletes the claim it made. in is not
// modified. A MessageStructure of "json" (a message per protocol) is
// refused: the envelope has one body.
func (p *TopicPublisher) Publish(ctx context.Context, in *awssns.PublishInput, optFns ...func(*awssns.Options)) (*awssns.PublishOutput, error) {
	dest := topicName(aws.ToString(in.TopicArn))
	if aws.ToString(in.MessageStructure) != "" {
		p.failed(dest)
		return nil, fmt.Errorf("publish to %s: %w: MessageStructure %q is not supported with claim checks", dest, claimcheck.ErrInvalidArgument, aws.ToString(in.MessageStructure))
	}
	out := *in
	body, attrs, ref, err := wrap(ctx, p.envelope, "SNS", aws.ToString(in.Message), in.MessageAttributes, snsAttr, snsAttrSize)
	if err != nil {
		p.failed(dest)
		return nil, fmt.Errorf("publish to %s: %w", dest, err)
	}
	out.Message, out.MessageAttributes = aws.String(body), attrs
	res, err := p.client.Publish(ctx, &out, optFns...)
	if err != nil {
		p.failed(dest)
		if ref != nil {
			return nil, p.dropOrphan(ctx, dest, *ref, err)
		}
		return nil, fmt.Errorf("publish to %s: %w", dest, err)
	}
	p.published(dest, mode(ref), len(aws.ToString(in.Message)))
	return res, nil
}

func snsAttr(dataType, s string) snstypes.MessageAttributeValue {
	return snstypes.MessageAttributeValue{DataType: aws.String(dataType), StringValue: aws.String(s)}
}

func snsAttrSize(name string, v snstypes.MessageAttributeValue) int64 {
	return attrSize(name, aws.ToString(v.DataType), v.StringValue, v.BinaryValue)
}

// topicName is the last part of a topic ARN (its name).
func topicName(arn string) string {
	for i := len(arn) - 1; i >= 0; i-- {
		if arn[i] == ':' {
			return arn[i+1:]
		}
	}
	return arn
}
