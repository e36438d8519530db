package kafka

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// The store's namespaces and their policy (brokertest.Open): "window"
// deletes after read with a 5-minute redelivery window, "acks" keeps a
// claim until the consumer groups release it.
const (
	nsWindow  = brokertest.Window
	nsAcks    = brokertest.Acks
	threshold = brokertest.Threshold
	maxAge    = brokertest.MaxAge
	retention = brokertest.Retention
)

const (
	topic    = "orders"
	dlqTopic = "orders-dlq"
	waitLong = 30 * time.Second // upper bound on waiting for something that must happen
)

type env struct {
	ctx   context.Context
	clock *clock.Fake
	store *engine.Store
	addrs []string
	prod  *kgo.Client
	m     *Metrics
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	store, clk := brokertest.Open(t)
	addrs, prod := startKafka(t, 2)
	return &env{ctx: ctx, clock: clk, store: store, addrs: addrs, prod: prod, m: NewMetrics(prometheus.NewRegistry())}
}

// startKafka runs franz-go's in-process Kafka (it listens on 127.0.0.1)
// with the test topics, and returns its addresses and a producer client
// that writes each record to the partition it names.
func startKafka(tb testing.TB, partitions int32) ([]string, *kgo.Client) {
	tb.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic, dlqTopic))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cluster.Close)
	addrs := cluster.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(4<<20))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(prod.Close)
	return addrs, prod
}

func (e *env) publisher(t *testing.T, cfg PublisherConfig) *Publisher {
	t.Helper()
	cfg.Metrics = e.m
	p, err := NewPublisher(e.ctx, e.store, e.prod, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// publish produces n records with keys k0..k(n-1), alternating between
// the two partitions, and returns their payloads by key.
func (e *env) publish(t *testing.T, p *Publisher, n, size int) map[string][]byte {
	t.Helper()
	want := map[string][]byte{}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		key := fmt.Sprintf("k%d", i)
		want[key] = brokertest.Body(size)
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % 2), Key: []byte(key), Value: want[key]}
	}
	if err := p.Publish(e.ctx, recs...); err != nil {
		t.Fatal(err)
	}
	return want
}

// member is a running consumer-group member.
type member struct {
	c      *Consumer
	cancel context.CancelFunc
	done   chan error
}

// run starts a group member whose Run goroutine the test stops with stop.
func (e *env) run(t *testing.T, cfg ConsumerConfig, h Handler) *member {
	t.Helper()
	cfg.Metrics = e.m
	cfg.Topics = []string{topic}
	c, err := NewConsumer(e.store, h, cfg, kgo.SeedBrokers(e.addrs...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	m := &member{c: c, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		// A test that expects Run to fail checks it through stop; here
		// the error is only reported.
		if err := <-m.done; err != nil {
			t.Logf("consumer run: %v", err)
		}
		c.Close()
	})
	return m
}

// stop ends Run after the batch in hand is settled (committed and
// released) and returns Run's error.
func (m *member) stop(t *testing.T) error {
	t.Helper()
	m.cancel()
	select {
	case err := <-m.done:
		m.done <- err // for the cleanup
		return err
	case <-time.After(waitLong):
		t.Fatal("consumer did not stop")
		return nil
	}
}

// collector is a handler that records every payload it got by key and
// signals when it has all of them.
type collector struct {
	mu   sync.Mutex
	got  map[string][]byte
	refs map[string]claimcheck.Ref
	want int
	all  chan struct{}
}

func newCollector(want int) *collector {
	return &collector{got: map[string][]byte{}, refs: map[string]claimcheck.Ref{}, want: want, all: make(chan struct{})}
}

func (c *collector) handle(_ context.Context, m *Message) error {
	if m.Err != nil {
		return m.Err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := string(m.Record.Key)
	c.got[key] = m.Body
	if m.Ref != nil {
		c.refs[key] = *m.Ref
	}
	if len(c.got) == c.want {
		close(c.all)
	}
	return nil
}

func (c *collector) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.all:
	case <-time.After(waitLong):
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("got %d of %d records", len(c.got), c.want)
	}
}

func (c *collector) check(t *testing.T, want map[string][]byte) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, w := range want {
		if !bytes.Equal(c.got[k], w) {
			t.Fatalf("record %s: got %d bytes, want %d", k, len(c.got[k]), len(w))
		}
	}
}
