package sqs

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// collect returns a handler that records every message it is given and
// answers with err.
func collect(err error) (Handler, func() []*Message) {
	var mu sync.Mutex
	var got []*Message
	return func(_ context.Context, m *Message) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, m)
			return err
		}, func() []*Message {
			mu.Lock()
			defer mu.Unlock()
			return append([]*Message(nil), got...)
		}
}

// pollUntil polls c until n messages were handled in all.
func pollUntil(t *testing.T, c *Consumer, n int) []Result {
	t.Helper()
	var all []Result
	for range 20 {
		rs, err := c.Poll(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rs...)
		if len(all) >= n {
			return all
		}
	}
	t.Fatalf("handled %d messages, want %d", len(all), n)
	return nil
}

// TestRoundTrip: a body above the threshold travels as a reference, one
// below as itself; the consumer hands both over as they were sent,
// deletes them, and releases the claim under the queue's name, after
// which the claim ends a retention window later.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.queue(t, "roundtrip", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})
	large, small := brokertest.Text(64<<10), brokertest.Text(threshold-1)
	e.send(t, pub, url, large)
	e.send(t, pub, url, small)

	h, got := collect(nil)
	c := e.consumer(t, e.sqs, url, h, ConsumerConfig{})
	for _, r := range pollUntil(t, c, 2) {
		if r.Outcome != Acked || r.Err != nil {
			t.Fatalf("result %+v", r)
		}
	}
	var ref *claimcheck.Ref
	for _, m := range got() {
		switch {
		case m.Ref != nil:
			brokertest.SameBody(t, m.Body, large)
			if aws.ToString(m.Msg.Body) != m.Ref.String() || len(aws.ToString(m.Msg.Body)) > claimcheck.MaxRefSize {
				t.Fatalf("offloaded message body on the wire: %q", aws.ToString(m.Msg.Body))
			}
			ref = m.Ref
		default:
			brokertest.SameBody(t, m.Body, small)
			if _, ok := m.Msg.MessageAttributes[AttrRef]; ok {
				t.Fatal("inline message has a reference attribute")
			}
		}
	}
	if ref == nil {
		t.Fatal("no offloaded message")
	}
	if !e.empty(t, url, 1) {
		t.Fatal("messages left in the queue after their delete")
	}
	info := brokertest.Stat(t, e.store, *ref)
	if info.State != claimcheck.StateActive || len(info.ReleasedBy) != 1 || info.ReleasedBy[0] != c.Name() || c.Name() != queueName(url) {
		t.Fatalf("after the delete: %+v (consumer %s)", info, c.Name())
	}
	e.clock.Advance(retention + time.Second)
	if info := brokertest.Stat(t, e.store, *ref); info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonReleased {
		t.Fatalf("after the retention window: %+v", info)
	}
}

// TestDefaultThreshold: without a threshold, what fits SQS's 1 MiB limit
// with its attributes is sent as it is, and only what does not is
// offloaded.
func TestDefaultThreshold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.queue(t, "fit", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks})
	attrs := map[string]sqstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("order")}}
	attrBytes := int64(len("kind") + len("String") + len("order"))
	fits, over := brokertest.Text(SQSMaxMessageSize-int(attrBytes)), brokertest.Text(SQSMaxMessageSize-int(attrBytes)+1)
	for _, b := range []string{fits, over} {
		if _, err := pub.Send(e.ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b), MessageAttributes: attrs}); err != nil {
			t.Fatalf("send %d bytes: %v", len(b), err)
		}
	}
	h, got := collect(nil)
	pollUntil(t, e.consumer(t, e.sqs, url, h, ConsumerConfig{}), 2)
	for _, m := range got() {
		if m.Err != nil || aws.ToString(m.Attributes["kind"].StringValue) != "order" {
			t.Fatalf("message %+v", m)
		}
		if (m.Ref != nil) != (len(m.Body) == len(over)) {
			t.Fatalf("%d bytes: offloaded %v", len(m.Body), m.Ref != nil)
		}
	}
}

// TestCrashBeforeDelete: a consumer that read the payload and died before
// deleting leaves the message to its visibility timeout; the redelivery
// finds the claim (inside the delete_after_read window) and settles it.
func TestCrashBeforeDelete(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.queue(t, "crash", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsWindow, Threshold: threshold})
	payload := brokertest.Text(32 << 10)
	e.send(t, pub, url, payload)

	// The crashed consumer: received (hidden for 1s), resolved, gone.
	h, got := collect(nil)
	crashed := e.consumer(t, e.sqs, url, h, ConsumerConfig{})
	first, err := crashed.Resolve(e.ctx, e.receive(t, url, 1))
	if err != nil || first.Err != nil {
		t.Fatal(err, first.Err)
	}
	brokertest.SameBody(t, first.Body, payload)
	if info := brokertest.Stat(t, e.store, *first.Ref); info.State != claimcheck.StateActive || info.Reads != 1 {
		t.Fatalf("after the first read: %+v", info)
	}

	// The redelivery, to a consumer that lives.
	c := e.consumer(t, e.sqs, url, h, ConsumerConfig{})
	rs := pollUntil(t, c, 1)
	if rs[0].Outcome != Acked || rs[0].Err != nil {
		t.Fatalf("redelivery: %+v", rs[0])
	}
	brokertest.SameBody(t, got()[0].Body, payload)
	if info := brokertest.Stat(t, e.store, *first.Ref); info.Reads != 2 || len(info.ReleasedBy) != 1 {
		t.Fatalf("after the redelivery: %+v", info)
	}
}

// TestFailedDelete: when DeleteMessage fails, the claim is not released
// (the message will come back and must still resolve); the redelivery
// settles it.
func TestFailedDelete(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.queue(t, "faildelete", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})
	payload := brokertest.Text(16 << 10)
	e.send(t, pub, url, payload)

	api := &failingSQS{SQSAPI: e.sqs}
	api.failDelete.Store(true)
	h, got := collect(nil)
	c := e.consumer(t, api, url, h, ConsumerConfig{VisibilityTimeout: 2 * time.Second})
	rs := pollUntil(t, c, 1)
	if rs[0].Outcome != Nakked || rs[0].Err == nil || !strings.Contains(rs[0].Err.Error(), "injected") {
		t.Fatalf("with the delete failing: %+v", rs[0])
	}
	ref := got()[0].Ref
	if info := brokertest.Stat(t, e.store, *ref); info.State != claimcheck.StateActive || len(info.ReleasedBy) != 0 {
		t.Fatalf("released although the delete failed: %+v", info)
	}

	api.failDelete.Store(false)
	rs = pollUntil(t, c, 1)
	if rs[0].Outcome != Acked || rs[0].Err != nil {
		t.Fatalf("redelivery: %+v", rs[0])
	}
	brokertest.SameBody(t, got()[1].Body, payload)
	if info := brokertest.Stat(t, e.store, *ref); len(info.ReleasedBy) != 1 {
		t.Fatalf("after the redelivery: %+v", info)
	}
}

// TestHandlerError: a failing handler leaves the message for redelivery
// (after NakDelay here) without releasing the claim.
func TestHandlerError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.queue(t, "nak", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})
	payload := brokertest.Text(8 << 10)
	e.send(t, pub, url, payload)

	fail := errors.New("not now")
	var calls int
	var ref claimcheck.Ref
	c := e.consumer(t, e.sqs, url, func(_ context.Context, m *Message) error {
		calls++
		ref = *m.Ref
		brokertest.SameBody(t, m.Body, payload)
		if calls == 1 {
			return fail
		}
		return nil
	}, ConsumerConfig{NakDelay: time.Second})
	if rs := pollUntil(t, c, 1); rs[0].Outcome != Nakked || !errors.Is(rs[0].Err, fail) {
		t.Fatalf("first delivery: %+v", rs[0])
	}
	if info := brokertest.Stat(t, e.store, ref); len(info.ReleasedBy) != 0 {
		t.Fatalf("released after a failed handler: %+v", info)
	}
	if rs := pollUntil(t, c, 1); rs[0].Outcome != Acked {
		t.Fatalf("second delivery: %+v", rs[0])
	}
}

// TestLongHandler: while a handler runs longer than the visibility
// timeout, the message stays hidden: another receiver waiting longer than
// the timeout gets nothing.
func TestLongHandler(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.queue(t, "long", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})
	e.send(t, pub, url, brokertest.Text(4<<10))
	var sawOther bool
	c := e.consumer(t, e.sqs, url, func(_ context.Context, m *Message) error {
		// Two and a half times the visibility timeout of 2s.
		sawOther = !e.empty(t, url, 5)
		return nil
	}, ConsumerConfig{VisibilityTimeout: 2 * time.Second})
	if rs := pollUntil(t, c, 1); rs[0].Outcome != Acked {
		t.Fatalf("%+v", rs[0])
	}
	if sawOther {
		t.Fatal("the message became visible while its handler ran")
	}
}

// TestBatch: SendBatch offloads per entry, Poll deletes in one batch and
// releases each claim.
func TestBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.queue(t, "batch", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})
	want := map[string]string{}
	var entries []sqstypes.SendMessageBatchRequestEntry
	for i, n := range []int{10, 20 << 10, 100, 30 << 10, 40 << 10} {
		id := string(rune('a' + i))
		want[id] = brokertest.Text(n)
		entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(want[id]),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"id": {DataType: aws.String("String"), StringValue: aws.String(id)}}})
	}
	out, err := pub.SendBatch(e.ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil || len(out.Successful) != len(entries) {
		t.Fatalf("send batch: %v %+v", err, out)
	}
	h, got := collect(nil)
	c := e.consumer(t, e.sqs, url, h, ConsumerConfig{})
	for _, r := range pollUntil(t, c, len(entries)) {
		if r.Outcome != Acked || r.Err != nil {
			t.Fatalf("%+v", r)
		}
	}
	refs := 0
	for _, m := range got() {
		brokertest.SameBody(t, m.Body, want[aws.ToString(m.Attributes["id"].StringValue)])
		if m.Ref != nil {
			refs++
			if info := brokertest.Stat(t, e.store, *m.Ref); len(info.ReleasedBy) != 1 {
				t.Fatalf("claim not released: %+v", info)
			}
		}
	}
	if refs != 3 || !e.empty(t, url, 1) {
		t.Fatalf("%d offloaded (want 3), or messages left", refs)
	}
}

// TestBatchPartialDelete: when DeleteMessageBatch fails one entry, only
// the others are released; the failed one comes back and is settled then.
func TestBatchPartialDelete(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.queue(t, "batch-partial", nil)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})
	var entries []sqstypes.SendMessageBatchRequestEntry
	for i := range 3 {
		entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(brokertest.Text(8 << 10))})
	}
	if _, err := pub.SendBatch(e.ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
		t.Fatal(err)
	}
	api := &failingSQS{SQSAPI: e.sqs}
	api.failFirstEntry.Store(true)
	h, got := collect(nil)
	c := e.consumer(t, api, url, h, ConsumerConfig{VisibilityTimeout: 2 * time.Second})
	rs, err := c.Poll(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < 2 {
		t.Skipf("the emulator answered %d messages to one receive; the case needs a batch", len(rs))
	}
	byID := map[string]*Message{}
	for _, m := range got() {
		byID[aws.ToString(m.Msg.MessageId)] = m
	}
	nakked := 0
	for _, r := range rs {
		info := brokertest.Stat(t, e.store, *byID[r.MessageID].Ref)
		switch r.Outcome {
		case Nakked:
			nakked++
			if !strings.Contains(r.Err.Error(), "InjectedFailure") || len(info.ReleasedBy) != 0 {
				t.Fatalf("failed entry: %+v, claim %+v", r, info)
			}
		case Acked:
			if r.Err != nil || len(info.ReleasedBy) != 1 {
				t.Fatalf("deleted entry: %+v, claim %+v", r, info)
			}
		default:
			t.Fatalf("%+v", r)
		}
	}
	if nakked != 1 {
		t.Fatalf("%d entries failed, want 1", nakked)
	}
	api.failFirstEntry.Store(false)
	pollUntil(t, c, 3-len(rs)+1)
	for _, m := range got() {
		if info := brokertest.Stat(t, e.store, *m.Ref); len(info.ReleasedBy) != 1 {
			t.Fatalf("not released in the end: %+v", info)
		}
	}
}

// TestGone: a message whose claim is gone reaches the handler with the
// reason; TerminateGone deletes it, RedriveGone leaves it to the queue's
// redrive policy, which moves it to the dead-letter queue.
func TestGone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dlq := e.queue(t, "gone-dlq", nil)
	url := e.queue(t, "gone", map[string]string{
		"RedrivePolicy": `{"maxReceiveCount":"2","deadLetterTargetArn":"` + e.queueArn(t, dlq) + `"}`,
	})
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})

	for _, mode := range []OnGone{TerminateGone, RedriveGone} {
		e.send(t, pub, url, brokertest.Text(4<<10))
		var told error
		c := e.consumer(t, e.sqs, url, func(_ context.Context, m *Message) error {
			if told = m.Err; told == nil {
				// Delete the claim under the message (an operator, or
				// max_age), and return the message for redelivery.
				if err := e.store.Delete(e.ctx, *m.Ref); err != nil {
					t.Error(err)
				}
				return errors.New("later")
			}
			return nil
		}, ConsumerConfig{OnGone: mode, NakDelay: time.Second})
		pollUntil(t, c, 1)
		rs := pollUntil(t, c, 1)
		var gone *claimcheck.GoneError
		if !errors.As(told, &gone) || gone.Reason != claimcheck.ReasonDeleted || !errors.Is(rs[0].Err, claimcheck.ErrGone) {
			t.Fatalf("mode %d: handler told %v, result %+v", mode, told, rs[0])
		}
		switch mode {
		case TerminateGone:
			if rs[0].Outcome != Terminated || !e.empty(t, url, 1) {
				t.Fatalf("terminate: %+v, or the message is still there", rs[0])
			}
		case RedriveGone:
			if rs[0].Outcome != DeadLettered {
				t.Fatalf("redrive: %+v", rs[0])
			}
			// Received twice: the redrive policy moves it on the next
			// receive.
			e.empty(t, url, 2)
			m := e.receive(t, dlq, 30)
			if _, ok := m.MessageAttributes[AttrRef]; !ok {
				t.Fatalf("dead letter without its reference: %+v", m)
			}
		}
	}

	// RedriveGone needs a redrive policy.
	if _, err := NewConsumer(e.ctx, e.store, e.sqs, dlq, func(context.Context, *Message) error { return nil },
		ConsumerConfig{OnGone: RedriveGone}); !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "RedrivePolicy") {
		t.Fatalf("RedriveGone on a queue without a redrive policy: %v", err)
	}
}

// TestFailedSend: a send that fails after the put deletes the claim it
// made (docs/adr/0040).
func TestFailedSend(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, Threshold: threshold})
	_, err := pub.Send(e.ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(e.queue(t, "x", nil) + "-missing"), MessageBody: aws.String(brokertest.Text(8 << 10))})
	if err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("send to a missing queue: %v", err)
	}
	page, err := e.store.List(e.ctx, nsAcks, claimcheck.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range page.Claims {
		if c.State == claimcheck.StateActive {
			t.Fatalf("claim left behind: %+v", c)
		}
	}
}
