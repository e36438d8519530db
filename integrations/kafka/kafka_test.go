package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// TestPublishConsume: large values travel as references with an empty
// value, small ones inline; the group gets every payload back, commits,
// and releases the claims as the group.
func TestPublishConsume(t *testing.T) {
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks})
	want := e.publish(t, pub, 6, 256<<10)
	small := &kgo.Record{Topic: topic, Key: []byte("small"), Value: brokertest.Body(threshold - 1)}
	if err := pub.Publish(e.ctx, small); err != nil {
		t.Fatal(err)
	}
	want["small"] = small.Value

	var inline, offloaded int
	col := newCollector(len(want))
	m := e.run(t, ConsumerConfig{Group: "billing"}, func(ctx context.Context, m *Message) error {
		if m.Ref != nil && len(m.Record.Value) == 0 {
			offloaded++
		} else if m.Ref == nil && len(m.Record.Headers) == 0 {
			inline++
		}
		return col.handle(ctx, m)
	})
	col.wait(t)
	if err := m.stop(t); err != nil {
		t.Fatal(err)
	}
	col.check(t, want)
	if offloaded != 6 || inline != 1 {
		t.Fatalf("%d offloaded, %d inline records on the wire", offloaded, inline)
	}
	for key, ref := range col.refs {
		info := brokertest.Stat(t, e.store, ref)
		if info.State != claimcheck.StateActive || len(info.ReleasedBy) != 1 || info.ReleasedBy[0] != "billing" {
			t.Fatalf("%s after the commit: %+v", key, info)
		}
	}
	if v := testutil.ToFloat64(e.m.published.WithLabelValues(topic, "offloaded")); v != 6 {
		t.Errorf("offloaded published = %v", v)
	}
	if v := testutil.ToFloat64(e.m.consumed.WithLabelValues(topic, "billing", "committed")); v != 7 {
		t.Errorf("committed = %v", v)
	}
}

// TestRebalance: member A of the group resolves some records (opening
// their redelivery windows) and dies before committing, while member B
// joins. After the rebalance B owns every partition, re-reads the
// records A had read, and they still resolve: their claims were not
// released, and the window has not ended.
func TestRebalance(t *testing.T) {
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsWindow})
	const n = 20
	want := e.publish(t, pub, n, 32<<10)

	hung := make(chan struct{})
	unblock := make(chan struct{})
	var aRead int
	a := e.run(t, ConsumerConfig{Group: "billing", MaxPollRecords: n}, func(_ context.Context, m *Message) error {
		if m.Err != nil {
			return m.Err
		}
		aRead++
		if aRead == 6 {
			close(hung) // A hangs on its sixth record and never commits
			<-unblock
			return errors.New("crashed")
		}
		return nil
	})
	t.Cleanup(func() { close(unblock) }) // runs before a's own cleanup
	<-hung

	col := newCollector(n)
	b := e.run(t, ConsumerConfig{Group: "billing"}, col.handle)
	e.clock.Advance(retention - time.Minute) // inside the windows A's reads opened
	a.c.Close()                              // A's process dies: it leaves the group
	col.wait(t)
	if err := b.stop(t); err != nil {
		t.Fatal(err)
	}
	col.check(t, want)

	var reads int64
	for key, ref := range col.refs {
		info := brokertest.Stat(t, e.store, ref)
		if len(info.ReleasedBy) != 1 || info.ReleasedBy[0] != "billing" {
			t.Fatalf("%s: %+v", key, info)
		}
		reads += info.Reads
	}
	if reads != n+6 {
		t.Fatalf("%d reads in all, want %d: each record once by B, six of them also by A", reads, n+6)
	}
}

// TestTwoGroups fans each record out to two consumer groups: the claims
// outlive the first group's commits (even past the retention window) and
// are finished a window after the second group's.
func TestTwoGroups(t *testing.T) {
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks, ConsumerNames: []string{"billing", "shipping"}})
	want := e.publish(t, pub, 4, 64<<10)

	billing := newCollector(len(want))
	m := e.run(t, ConsumerConfig{Group: "billing"}, billing.handle)
	billing.wait(t)
	if err := m.stop(t); err != nil {
		t.Fatal(err)
	}
	billing.check(t, want)
	e.clock.Advance(retention + time.Minute)
	for key, ref := range billing.refs {
		if info := brokertest.Stat(t, e.store, ref); info.State != claimcheck.StateActive || len(info.ReleasedBy) != 1 {
			t.Fatalf("%s after one group: %+v", key, info)
		}
	}

	shipping := newCollector(len(want))
	m = e.run(t, ConsumerConfig{Group: "shipping"}, shipping.handle)
	shipping.wait(t)
	if err := m.stop(t); err != nil {
		t.Fatal(err)
	}
	shipping.check(t, want)
	e.clock.Advance(retention)
	for key, ref := range shipping.refs {
		info := brokertest.Stat(t, e.store, ref)
		if info.State != claimcheck.StateDeleted || info.DeleteReason != claimcheck.ReasonReleased || len(info.ReleasedBy) != 2 {
			t.Fatalf("%s after both groups and the window: %+v", key, info)
		}
	}
}

// TestGoneDeadLetter: a record read after its claim's max_age tells the
// handler the claim expired, goes to the dead-letter topic and is
// committed, so the partition moves on to the next record.
func TestGoneDeadLetter(t *testing.T) {
	e := setup(t)
	pub := e.publisher(t, PublisherConfig{Namespace: nsAcks})
	e.publish(t, pub, 1, 8<<10)
	e.clock.Advance(maxAge + time.Second)
	later := e.publish(t, pub, 1, 8<<10) // published after the first one expired: still good

	told := make(chan error, 1)
	col := newCollector(1)
	m := e.run(t, ConsumerConfig{Group: "billing", DeadLetterTopic: dlqTopic}, func(ctx context.Context, m *Message) error {
		if m.Err != nil {
			told <- m.Err
			return nil
		}
		return col.handle(ctx, m)
	})
	col.wait(t)
	if err := m.stop(t); err != nil {
		t.Fatal(err)
	}
	col.check(t, later)
	var gone *claimcheck.GoneError
	if err := <-told; !errors.As(err, &gone) || gone.Reason != claimcheck.ReasonExpired {
		t.Fatalf("handler was told %v, want gone (expired)", err)
	}

	dl, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...), kgo.ConsumeTopics(dlqTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	ctx, cancel := context.WithTimeout(e.ctx, waitLong)
	defer cancel()
	recs := dl.PollFetches(ctx).Records()
	if len(recs) != 1 {
		t.Fatalf("%d dead letters", len(recs))
	}
	headers := map[string]string{}
	for _, h := range recs[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	if headers[HeaderGoneReason] != string(claimcheck.ReasonExpired) || headers[HeaderTopic] != topic || headers[HeaderRef] == "" {
		t.Fatalf("dead letter headers: %v", headers)
	}
	if v := testutil.ToFloat64(e.m.consumed.WithLabelValues(topic, "billing", "dead_lettered")); v != 1 {
		t.Errorf("dead_lettered = %v", v)
	}
}

// TestPublishFailureDeletesClaim: a produce that Kafka refuses (the topic
// does not exist) leaves no claim behind.
func TestPublishFailureDeletesClaim(t *testing.T) {
	e := setup(t)
	prod, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...), kgo.UnknownTopicRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	rec := &brokertest.Recorder{Claims: e.store}
	pub, err := NewPublisher(e.ctx, rec, prod, PublisherConfig{Namespace: nsAcks, Metrics: e.m})
	if err != nil {
		t.Fatal(err)
	}
	err = pub.Publish(e.ctx, &kgo.Record{Topic: "nowhere", Value: brokertest.Body(4 << 10)})
	if err == nil {
		t.Fatal("produce to a missing topic succeeded")
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
		t.Fatalf("claim of the failed produce: %+v", info)
	}
	if v := testutil.ToFloat64(e.m.orphansDeleted.WithLabelValues("nowhere")); v != 1 {
		t.Errorf("orphans deleted = %v", v)
	}
}

// TestPublishAbortDeletesEarlierClaims: a call whose later record cannot
// be published produces nothing and deletes the claims it made for the
// earlier records.
func TestPublishAbortDeletesEarlierClaims(t *testing.T) {
	e := setup(t)
	rec := &brokertest.Recorder{Claims: e.store}
	pub, err := NewPublisher(e.ctx, rec, e.prod, PublisherConfig{Namespace: nsAcks})
	if err != nil {
		t.Fatal(err)
	}
	err = pub.Publish(e.ctx,
		&kgo.Record{Topic: topic, Value: brokertest.Body(4 << 10)},
		&kgo.Record{Topic: topic, Value: brokertest.Body(4 << 10), Headers: []kgo.RecordHeader{{Key: HeaderRef, Value: []byte("{}")}}})
	if !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Fatalf("publish = %v, want invalid argument (the record has a ref header)", err)
	}
	refs := rec.Refs()
	if len(refs) != 1 {
		t.Fatalf("%d claims created", len(refs))
	}
	if info, err := e.store.Stat(e.ctx, refs[0]); err != nil || info.State != claimcheck.StateDeleted {
		t.Fatalf("claim of the aborted call: %+v, %v", info, err)
	}
}
