package sqs

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// topic creates a topic with one queue subscribed per entry of raw
// (raw message delivery on or off), and returns the topic's ARN and the
// queues' URLs.
func (e *env) topic(t *testing.T, name string, raw ...bool) (string, []string) {
	t.Helper()
	out, err := e.sns.CreateTopic(e.ctx, &awssns.CreateTopicInput{Name: aws.String(fmt.Sprintf("%s-%d", name, time.Now().UnixNano()))})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(out.TopicArn)
	var urls []string
	for i, r := range raw {
		url := e.queue(t, fmt.Sprintf("%s-sub%d", name, i), nil)
		if _, err := e.sns.Subscribe(e.ctx, &awssns.SubscribeInput{
			TopicArn: aws.String(arn), Protocol: aws.String("sqs"), Endpoint: aws.String(e.queueArn(t, url)),
			Attributes: map[string]string{"RawMessageDelivery": fmt.Sprint(r)},
		}); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, url)
	}
	return arn, urls
}

// TestSNSFanOut: a topic with three subscribed queues (raw delivery on,
// off, on); the publisher declares the three consumers. Two delete their
// copy at once, the third much later: the claim outlives the first two
// releases and their retention window, and ends a window after the last.
// An inline message reaches every queue as it was sent, attributes
// included.
func TestSNSFanOut(t *testing.T) {
	t.Parallel()
	e := setup(t)
	arn, urls := e.topic(t, "fanout", true, false, true)
	names := []string{queueName(urls[0]), queueName(urls[1]), queueName(urls[2])}
	pub, err := NewTopicPublisher(e.ctx, e.store, e.sns, PublisherConfig{Namespace: nsAcks, Threshold: threshold, ConsumerNames: names, Metrics: e.m})
	if err != nil {
		t.Fatal(err)
	}
	large, small := brokertest.Text(48<<10), brokertest.Text(100)
	for _, b := range []string{large, small} {
		if _, err := pub.Publish(e.ctx, &awssns.PublishInput{TopicArn: aws.String(arn), Message: aws.String(b),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("video")}}}); err != nil {
			t.Fatal(err)
		}
	}

	var ref *claimcheck.Ref
	consume := func(i int) {
		t.Helper()
		h, got := collect(nil)
		c := e.consumer(t, e.sqs, urls[i], h, ConsumerConfig{SNSEnvelope: true})
		for _, r := range pollUntil(t, c, 2) {
			if r.Outcome != Acked || r.Err != nil {
				t.Fatalf("queue %d: %+v", i, r)
			}
		}
		for _, m := range got() {
			if aws.ToString(m.Attributes["kind"].StringValue) != "video" {
				t.Fatalf("queue %d: attributes %+v", i, m.Attributes)
			}
			if notif := strings.Contains(aws.ToString(m.Msg.Body), `"Type":"Notification"`); notif != (i == 1) {
				t.Fatalf("queue %d: body on the wire %.80q", i, aws.ToString(m.Msg.Body))
			}
			if m.Ref != nil {
				brokertest.SameBody(t, m.Body, large)
				ref = m.Ref
			} else {
				brokertest.SameBody(t, m.Body, small)
			}
		}
	}
	consume(0)
	consume(1)
	if ref == nil {
		t.Fatal("no offloaded message")
	}
	if info := brokertest.Stat(t, e.store, *ref); info.State != claimcheck.StateActive || info.Releases != 2 || info.Consumers != 3 {
		t.Fatalf("after two of three: %+v", info)
	}
	// The slow consumer is late by more than the retention window.
	e.clock.Advance(2 * retention)
	if info := brokertest.Stat(t, e.store, *ref); info.State != claimcheck.StateActive {
		t.Fatalf("gone before the slow consumer read it: %+v", info)
	}
	consume(2)
	if info := brokertest.Stat(t, e.store, *ref); info.State != claimcheck.StateActive || info.Releases != 3 {
		t.Fatalf("after the third: %+v", info)
	}
	e.clock.Advance(retention + time.Second)
	if info := brokertest.Stat(t, e.store, *ref); info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonReleased {
		t.Fatalf("a window after the last release: %+v", info)
	}
}

// TestSNSEnvelopeNotConfigured: consumers not told SNSEnvelope, behind
// subscriptions with raw message delivery on and off. Both hand the
// offloaded body over as it was published, with its attributes, and both
// release the claim, which then ends a window after the second release.
// An inline message behind the non-raw subscription stays the
// notification a plain SNS subscriber receives (ADR 0275).
func TestSNSEnvelopeNotConfigured(t *testing.T) {
	t.Parallel()
	e := setup(t)
	arn, urls := e.topic(t, "noenv", true, false)
	names := []string{queueName(urls[0]), queueName(urls[1])}
	pub, err := NewTopicPublisher(e.ctx, e.store, e.sns, PublisherConfig{Namespace: nsAcks, Threshold: threshold, ConsumerNames: names, Metrics: e.m})
	if err != nil {
		t.Fatal(err)
	}
	large, small := brokertest.Text(48<<10), brokertest.Text(100)
	for _, b := range []string{large, small} {
		if _, err := pub.Publish(e.ctx, &awssns.PublishInput{TopicArn: aws.String(arn), Message: aws.String(b),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("video")}}}); err != nil {
			t.Fatal(err)
		}
	}
	var ref *claimcheck.Ref
	for i, url := range urls {
		h, got := collect(nil)
		c := e.consumer(t, e.sqs, url, h, ConsumerConfig{})
		for _, r := range pollUntil(t, c, 2) {
			if r.Outcome != Acked || r.Err != nil {
				t.Fatalf("queue %d: %+v", i, r)
			}
		}
		for _, m := range got() {
			switch {
			case m.Ref != nil:
				brokertest.SameBody(t, m.Body, large)
				if aws.ToString(m.Attributes["kind"].StringValue) != "video" {
					t.Fatalf("queue %d: attributes %+v", i, m.Attributes)
				}
				ref = m.Ref
			case strings.Contains(m.Body, `"Type":"Notification"`):
				if i != 1 || !strings.Contains(m.Body, small) {
					t.Fatalf("queue %d: handed over as a notification (%d bytes): %.120q", i, len(m.Body), m.Body)
				}
			default:
				brokertest.SameBody(t, m.Body, small)
			}
		}
		if ref == nil {
			t.Fatalf("queue %d: the offloaded message reached the handler as %.120q", i, got()[0].Body)
		}
		if info := brokertest.Stat(t, e.store, *ref); info.Releases != i+1 {
			t.Fatalf("after queue %d: %+v", i, info)
		}
	}
	e.clock.Advance(retention + time.Second)
	if info := brokertest.Stat(t, e.store, *ref); info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonReleased {
		t.Fatalf("a window after the last release: %+v", info)
	}
}

// notificationJSON is what an SNS subscription without raw message
// delivery would put in a queue for message with a Claimcheck-Ref
// attribute of value ref.
func notificationJSON(t *testing.T, message, ref string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"Type": "Notification", "MessageId": "11111111-2222-3333-4444-555555555555",
		"TopicArn": "arn:aws:sns:us-east-1:100010001000:lookalike", "Message": message,
		"MessageAttributes": map[string]any{AttrRef: map[string]string{"Type": "String", "Value": ref}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSNSEnvelopeLookalike: payloads that only look like a notification
// carrying a reference are not unwrapped by a consumer not told
// SNSEnvelope: one sent with an attribute of its own (no subscription
// without raw delivery sets any), and one offloaded (the message's own
// Claimcheck-Ref wins, and the resolved bytes are the payload as they
// are).
func TestSNSEnvelopeLookalike(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.queue(t, "lookalike", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})
	other, err := e.store.Put(e.ctx, nsAcks, strings.NewReader(brokertest.Text(2*threshold)), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inline := notificationJSON(t, "inline", other.String())
	if _, err := pub.Send(e.ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(inline),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("json")}}}); err != nil {
		t.Fatal(err)
	}
	offloaded := notificationJSON(t, brokertest.Text(2*threshold), other.String())
	e.send(t, pub, url, offloaded)

	h, got := collect(nil)
	c := e.consumer(t, e.sqs, url, h, ConsumerConfig{})
	for _, r := range pollUntil(t, c, 2) {
		if r.Outcome != Acked || r.Err != nil {
			t.Fatalf("%+v", r)
		}
	}
	for _, m := range got() {
		if m.Ref != nil && m.Ref.ID == other.ID {
			t.Fatalf("a lookalike was unwrapped to the claim inside it")
		}
		if m.Body != inline && m.Body != offloaded {
			t.Fatalf("payload %.120q, want one of the lookalikes as sent", m.Body)
		}
	}
	if info := brokertest.Stat(t, e.store, other); info.Releases != 0 {
		t.Fatalf("the claim inside a lookalike was released: %+v", info)
	}
}
