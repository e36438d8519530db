package nats

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/sweep"
)

// Namespaces of the test store. "window" deletes after read with a
// 5-minute redelivery window (the seed's example 3); "acks" keeps claims
// until their consumers release them.
const (
	nsWindow  = "window"
	nsAcks    = "acks"
	threshold = 1024
	maxAge    = time.Hour
	retention = 5 * time.Minute
	ackWait   = 500 * time.Millisecond // real time: how soon an unacked message comes back
	waitLong  = 20 * time.Second       // upper bound on waiting for a delivery that must come
)

type env struct {
	ctx    context.Context
	clock  *clock.Fake
	store  *engine.Store
	srv    *server.Server
	nc     *natsgo.Conn
	js     jetstream.JetStream
	reg    *prometheus.Registry
	m      *Metrics
	stream jetstream.Stream
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	clk := clock.NewFake(time.Date(2026, 1, 9, 12, 0, 0, 0, time.UTC))
	yes, no := true, false
	store := enginetest.Open(t, engine.Config{
		Clock: clk, Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{
			nsWindow: {Threshold: threshold, TTL: claimcheck.TTLPolicy{
				MaxAge: claimcheck.Duration(maxAge), DeleteAfterRead: &yes, RetentionAfterRead: claimcheck.Duration(retention)}},
			nsAcks: {Threshold: threshold, TTL: claimcheck.TTLPolicy{
				MaxAge: claimcheck.Duration(maxAge), DeleteAfterRead: &no, RetentionAfterRead: claimcheck.Duration(retention)}},
		},
	})

	srv, nc, js := startNATS(t)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	return &env{ctx: ctx, clock: clk, store: store, srv: srv, nc: nc, js: js, reg: reg, m: NewMetrics(reg), stream: stream}
}

// startNATS runs a real NATS server with JetStream inside the test
// process, on a random port of 127.0.0.1, storing in a temp dir.
func startNATS(tb testing.TB) (*server.Server, *natsgo.Conn, jetstream.JetStream) {
	tb.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: tb.TempDir(),
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		tb.Fatal(err)
	}
	srv.Start()
	tb.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(waitLong) {
		tb.Fatal("nats server not ready")
	}
	nc, err := natsgo.Connect(srv.ClientURL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return srv, nc, js
}

// durable creates a durable pull consumer on orders.> with explicit acks.
func (e *env) durable(t *testing.T, name string) jetstream.Consumer {
	t.Helper()
	cons, err := e.js.CreateOrUpdateConsumer(e.ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, FilterSubject: "orders.>",
	})
	if err != nil {
		t.Fatal(err)
	}
	return cons
}

func (e *env) publisher(t *testing.T, cfg PublisherConfig) *Publisher {
	t.Helper()
	cfg.Metrics = e.m
	p, err := NewPublisher(e.ctx, e.store, e.js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) consumer(t *testing.T, cons jetstream.Consumer, h Handler, cfg ConsumerConfig) *Consumer {
	t.Helper()
	cfg.Metrics = e.m
	c, err := NewConsumer(e.store, cons, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// next waits for the next delivery to cons; the broker runs on real time,
// so a redelivery after an ack timeout arrives within ackWait.
func next(t *testing.T, cons jetstream.Consumer) jetstream.Msg {
	t.Helper()
	msg, err := cons.Next(jetstream.FetchMaxWait(waitLong))
	if err != nil {
		t.Fatalf("next message: %v", err)
	}
	return msg
}

// stat returns the claim's info after letting the sweeper finish what is
// due at the fake clock's time.
func (e *env) stat(t *testing.T, ref claimcheck.Ref) claimcheck.ClaimInfo {
	t.Helper()
	if _, err := e.store.SweepOnce(e.ctx, 1000); err != nil {
		t.Fatal(err)
	}
	info, err := e.store.Stat(e.ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// terminated subscribes to the server's advisories of terminated
// messages of consumer; the returned channel gets one value per Term.
func (e *env) terminated(t *testing.T, consumer string) <-chan struct{} {
	t.Helper()
	ch := make(chan struct{}, 16)
	sub, err := e.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS."+consumer, func(*natsgo.Msg) { ch <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLong):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// body returns n random bytes: they do not compress, and no two bodies
// are deduplicated.
func body(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// recorder wraps the store and records the refs of every put, so a test
// can follow a claim whose ref it never saw (a failed publish).
type recorder struct {
	claimcheck.Claims
	mu   sync.Mutex
	refs []claimcheck.Ref
}

func (r *recorder) Put(ctx context.Context, ns string, b io.Reader, opts claimcheck.PutOptions) (claimcheck.Ref, error) {
	ref, err := r.Claims.Put(ctx, ns, b, opts)
	if err == nil {
		r.mu.Lock()
		r.refs = append(r.refs, ref)
		r.mu.Unlock()
	}
	return ref, err
}

func sameBytes(t *testing.T, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("payload differs: got %d bytes, want %d", len(got), len(want))
	}
}
