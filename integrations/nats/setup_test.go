package nats

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// The store's namespaces and their policy (brokertest.Open): "window"
// deletes after read with a 5-minute redelivery window, "acks" keeps a
// claim until its consumers release it.
const (
	nsWindow  = brokertest.Window
	nsAcks    = brokertest.Acks
	threshold = brokertest.Threshold
	maxAge    = brokertest.MaxAge
	retention = brokertest.Retention
)

const (
	ackWait  = 500 * time.Millisecond // real time: how soon an unacked message comes back
	waitLong = 20 * time.Second       // upper bound on waiting for a delivery that must come
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
	store, clk := brokertest.Open(t)
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
