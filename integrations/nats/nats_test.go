package nats

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// TestHappyPath is scenario 1 of the TTL ADR: a large body is offloaded,
// the consumer gets it back, acks, and the claim is finished after the
// retention window. A small body travels inline, untouched.
func TestHappyPath(t *testing.T) {
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks})
	large, small := brokertest.Body(64<<10), brokertest.Body(threshold-1)
	if _, err := pub.Publish(e.ctx, "orders.created", large); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Publish(e.ctx, "orders.created", small); err != nil {
		t.Fatal(err)
	}

	// On the wire: the large one is a reference with an empty body, the
	// small one is itself.
	raw, err := e.stream.GetMsg(e.ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.Data) != 0 || raw.Header.Get(HeaderRef) == "" {
		t.Fatalf("offloaded message: %d body bytes, ref header %q", len(raw.Data), raw.Header.Get(HeaderRef))
	}
	if len(raw.Header.Get(HeaderRef)) > claimcheck.MaxRefSize {
		t.Fatalf("ref header is %d bytes", len(raw.Header.Get(HeaderRef)))
	}
	raw, err = e.stream.GetMsg(e.ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get(HeaderRef) != "" {
		t.Fatal("inline message has a ref header")
	}
	brokertest.SameBody(t, raw.Data, small)

	// Consume asynchronously, as an application would.
	got := make(chan *Message, 2)
	c := e.consumer(t, e.durable(t, "billing"), func(_ context.Context, m *Message) error {
		got <- m
		return nil
	}, ConsumerConfig{})
	cc, err := c.Consume(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	m1, m2 := <-got, <-got
	cc.Drain()
	<-cc.Closed()
	if m1.Ref == nil || m1.Err != nil || m2.Ref != nil || m2.Err != nil {
		t.Fatalf("messages: %+v, %+v", m1, m2)
	}
	brokertest.SameBody(t, m1.Body, large)
	brokertest.SameBody(t, m2.Body, small)

	// The ack released the claim as "billing" once the handler returned;
	// Drain waited for that. The claim ends a retention window later.
	info := brokertest.Stat(t, e.store, *m1.Ref)
	if info.State != claimcheck.StateActive || info.Reads != 1 || len(info.ReleasedBy) != 1 || info.ReleasedBy[0] != "billing" {
		t.Fatalf("after the ack: %+v", info)
	}
	e.clock.Advance(retention + 1)
	if info := brokertest.Stat(t, e.store, *m1.Ref); info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonReleased {
		t.Fatalf("after the retention window: %+v", info)
	}

	if v := testutil.ToFloat64(e.m.published.WithLabelValues("orders.created", "offloaded")); v != 1 {
		t.Errorf("offloaded published = %v", v)
	}
	if v := testutil.ToFloat64(e.m.published.WithLabelValues("orders.created", "inline")); v != 1 {
		t.Errorf("inline published = %v", v)
	}
	if v := testutil.ToFloat64(e.m.consumed.WithLabelValues("orders.created", "billing", "acked")); v != 2 {
		t.Errorf("acked = %v", v)
	}
}

// TestConsumerCrash is scenario 2: the consumer takes the message and
// dies before reading it. Nothing releases the claim, so max_age does;
// the redelivery after that is told the claim expired and is terminated
// instead of coming back until max_deliver.
func TestConsumerCrash(t *testing.T) {
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks})
	payload := brokertest.Body(8 << 10)
	if _, err := pub.Publish(e.ctx, "orders.created", payload); err != nil {
		t.Fatal(err)
	}
	cons := e.durable(t, "billing")
	crashed := next(t, cons) // delivered, never resolved nor acked
	ref, err := claimcheck.ParseRef([]byte(crashed.Headers().Get(HeaderRef)))
	if err != nil {
		t.Fatal(err)
	}

	e.clock.Advance(maxAge + 1)
	if info := brokertest.Stat(t, e.store, ref); info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonExpired {
		t.Fatalf("after max_age: %+v", info)
	}

	terms := e.terminated(t, "billing")
	var told error
	c := e.consumer(t, cons, func(_ context.Context, m *Message) error {
		told = m.Err
		return errors.New("the handler's answer does not matter for a gone claim")
	}, ConsumerConfig{})
	out, err := c.Handle(e.ctx, next(t, cons)) // the redelivery after the ack wait
	if out != Terminated || !errors.Is(err, claimcheck.ErrExpired) {
		t.Fatalf("Handle = %s, %v; want terminated, expired", out, err)
	}
	var gone *claimcheck.GoneError
	if !errors.As(told, &gone) || gone.Reason != claimcheck.ReasonExpired {
		t.Fatalf("handler was told %v, want a *GoneError with reason expired", told)
	}
	waitFor(t, terms, "the terminated advisory")
	info, err := cons.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || info.NumPending != 0 {
		t.Fatalf("after Term: %d pending acks, %d pending messages", info.NumAckPending, info.NumPending)
	}
	if v := testutil.ToFloat64(e.m.resolveErrors.WithLabelValues("orders.created", "billing", "expired")); v != 1 {
		t.Errorf("resolve errors (expired) = %v", v)
	}
}

// TestSlowConsumer is scenario 3: the message waits most of max_age in
// the stream and the handler takes long; the claim is still there, and is
// finished a retention window after the (late) ack.
func TestSlowConsumer(t *testing.T) {
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks})
	payload := brokertest.Body(16 << 10)
	if _, err := pub.Publish(e.ctx, "orders.created", payload); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(maxAge - 20*time.Minute) // queued behind a backlog

	var ref claimcheck.Ref
	cons := e.durable(t, "ml")
	c := e.consumer(t, cons, func(_ context.Context, m *Message) error {
		brokertest.SameBody(t, m.Body, payload)
		ref = *m.Ref
		// Long processing: tell the broker we are alive, while the
		// store's clock moves on by 10 minutes.
		if err := m.Msg.InProgress(); err != nil {
			return err
		}
		e.clock.Advance(10 * time.Minute)
		return nil
	}, ConsumerConfig{})
	if out, err := c.Handle(e.ctx, next(t, cons)); out != Acked || err != nil {
		t.Fatalf("Handle = %s, %v", out, err)
	}
	info := brokertest.Stat(t, e.store, ref)
	if info.State != claimcheck.StateActive || len(info.ReleasedBy) != 1 {
		t.Fatalf("after the slow ack: %+v", info)
	}
	if want := e.clock.Now().Add(retention); !info.DeleteAt.Equal(want) {
		t.Fatalf("delete_at = %v, want release + retention = %v", info.DeleteAt, want)
	}
	e.clock.Advance(retention)
	if info := brokertest.Stat(t, e.store, ref); info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonReleased {
		t.Fatalf("after the window: %+v", info)
	}
}

// TestRedelivery is scenario 4 with delete_after_read: a nak brings the
// message back inside the redelivery window and it resolves again; after
// the window the claim is gone, the handler is told why, and the message
// goes to the dead-letter subject and is terminated.
func TestRedelivery(t *testing.T) {
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsWindow})
	payload := brokertest.Body(32 << 10)
	if _, err := pub.Publish(e.ctx, "orders.created", payload); err != nil {
		t.Fatal(err)
	}
	cons := e.durable(t, "billing")
	terms := e.terminated(t, "billing")
	var deliveries atomic.Int32
	var told error
	var ref claimcheck.Ref
	c := e.consumer(t, cons, func(_ context.Context, m *Message) error {
		deliveries.Add(1)
		if m.Err != nil {
			told = m.Err
			return nil
		}
		brokertest.SameBody(t, m.Body, payload)
		ref = *m.Ref
		return errors.New("downstream unavailable, try again") // nak
	}, ConsumerConfig{DeadLetterSubject: "dlq.orders", JetStream: e.js})

	// Delivery 1 reads (the window opens) and naks; delivery 2 comes
	// 4 minutes later by the store's clock, inside the window.
	if out, err := c.Handle(e.ctx, next(t, cons)); out != Nakked || err == nil {
		t.Fatalf("delivery 1: %s, %v", out, err)
	}
	e.clock.Advance(retention - time.Minute)
	if out, _ := c.Handle(e.ctx, next(t, cons)); out != Nakked {
		t.Fatalf("delivery 2 (inside the window): %s", out)
	}

	// Delivery 3 comes after the window. (The store records reads in
	// batches off the redeem path; Stat waits for them, so the first
	// read is on record before the fake clock jumps past its window.
	// With real time the batch lands within milliseconds.)
	if info := brokertest.Stat(t, e.store, ref); info.Reads != 2 {
		t.Fatalf("after two deliveries: %+v", info)
	}
	e.clock.Advance(2 * time.Minute)
	out, err := c.Handle(e.ctx, next(t, cons))
	if out != DeadLettered || !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("delivery 3 (after the window): %s, %v", out, err)
	}
	var gone *claimcheck.GoneError
	if !errors.As(told, &gone) || gone.Reason != claimcheck.ReasonReadRetention {
		t.Fatalf("handler was told %v, want gone (read_retention_over)", told)
	}
	if deliveries.Load() != 3 {
		t.Fatalf("%d deliveries", deliveries.Load())
	}
	waitFor(t, terms, "the terminated advisory")

	dlq, err := e.js.CreateOrUpdateConsumer(e.ctx, "DLQ", jetstream.ConsumerConfig{Durable: "ops", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	dl := next(t, dlq)
	if dl.Headers().Get(HeaderGoneReason) != string(claimcheck.ReasonReadRetention) ||
		dl.Headers().Get(HeaderSubject) != "orders.created" || dl.Headers().Get(HeaderRef) == "" ||
		dl.Headers().Get(HeaderError) == "" {
		t.Fatalf("dead letter headers: %v", dl.Headers())
	}
	info, err := cons.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 {
		t.Fatalf("%d acks pending after Term", info.NumAckPending)
	}
}

// TestCrashAfterRedeem: a consumer resolves the message (the read opens
// the redelivery window) and dies before acking. Its replacement gets
// the redelivery inside the window, resolves the same bytes and acks.
func TestCrashAfterRedeem(t *testing.T) {
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsWindow})
	payload := brokertest.Body(24 << 10)
	if _, err := pub.Publish(e.ctx, "orders.created", payload); err != nil {
		t.Fatal(err)
	}
	cons := e.durable(t, "billing")
	handler := func(_ context.Context, m *Message) error {
		if m.Err != nil {
			return m.Err
		}
		brokertest.SameBody(t, m.Body, payload)
		return nil
	}
	first := e.consumer(t, cons, handler, ConsumerConfig{})
	m, err := first.Resolve(e.ctx, next(t, cons))
	if err != nil || m.Err != nil {
		t.Fatalf("resolve: %v, %v", err, m.Err)
	}
	brokertest.SameBody(t, m.Body, payload)
	// ... and the process dies here: no ack, no release.

	e.clock.Advance(retention - time.Second)
	second := e.consumer(t, cons, handler, ConsumerConfig{})
	if out, err := second.Handle(e.ctx, next(t, cons)); out != Acked || err != nil {
		t.Fatalf("redelivery: %s, %v", out, err)
	}
	info := brokertest.Stat(t, e.store, *m.Ref)
	if info.Reads != 2 || len(info.ReleasedBy) != 1 {
		t.Fatalf("after the redelivery: %+v", info)
	}
}

// TestFanOut publishes for three durable consumers: the claim outlives
// the first two acks (even past their retention windows) and is finished
// a window after the third.
func TestFanOut(t *testing.T) {
	e := setup(t)
	names := []string{"billing", "shipping", "audit"}
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, ConsumerNames: names})
	payload := brokertest.Body(48 << 10)
	if _, err := pub.Publish(e.ctx, "orders.created", payload); err != nil {
		t.Fatal(err)
	}
	var ref claimcheck.Ref
	for i, name := range names {
		cons := e.durable(t, name)
		c := e.consumer(t, cons, func(_ context.Context, m *Message) error {
			brokertest.SameBody(t, m.Body, payload)
			ref = *m.Ref
			return nil
		}, ConsumerConfig{})
		if out, err := c.Handle(e.ctx, next(t, cons)); out != Acked || err != nil {
			t.Fatalf("%s: %s, %v", name, out, err)
		}
		e.clock.Advance(retention + time.Minute)
		info := brokertest.Stat(t, e.store, ref)
		if i < len(names)-1 {
			if info.State != claimcheck.StateActive || len(info.ReleasedBy) != i+1 {
				t.Fatalf("after %d of 3 acks: %+v", i+1, info)
			}
			continue
		}
		if info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonReleased || len(info.ReleasedBy) != 3 {
			t.Fatalf("after all three acks and the window: %+v", info)
		}
	}
}

// TestPublishFailureDeletesClaim: a publish that JetStream refuses (no
// stream captures the subject) leaves no claim behind.
func TestPublishFailureDeletesClaim(t *testing.T) {
	e := setup(t)
	rec := &brokertest.Recorder{Claims: e.store}
	pub, err := NewPublisher(e.ctx, rec, e.js, PublisherConfig{Namespace: nsAcks, Metrics: e.m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Publish(e.ctx, "nowhere.created", brokertest.Body(4<<10)); err == nil {
		t.Fatal("publish to a subject without a stream succeeded")
	}
	refs := rec.Refs()
	if len(refs) != 1 {
		t.Fatalf("%d claims created", len(refs))
	}
	info, err := e.store.Stat(e.ctx, refs[0])
	if err != nil {
		t.Fatal(err)
	}
	if info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonDeleted {
		t.Fatalf("claim of the failed publish: %+v", info)
	}
	if v := testutil.ToFloat64(e.m.orphansDeleted.WithLabelValues("nowhere.created")); v != 1 {
		t.Errorf("orphans deleted = %v", v)
	}
}

// TestMalformedRef: a message whose ref header is not a reference is
// handed to the handler as an error and terminated.
func TestMalformedRef(t *testing.T) {
	e := setup(t)
	if _, err := e.js.PublishMsg(e.ctx, &natsgo.Msg{Subject: "orders.created", Header: natsgo.Header{HeaderRef: {`{"type":"nope"}`}}}); err != nil {
		t.Fatal(err)
	}
	cons := e.durable(t, "billing")
	c := e.consumer(t, cons, func(context.Context, *Message) error { return nil }, ConsumerConfig{})
	if out, err := c.Handle(e.ctx, next(t, cons)); out != Terminated || !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Fatalf("Handle = %s, %v", out, err)
	}
}
