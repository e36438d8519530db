package nats_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	ccnats "github.com/claimcheck/claimcheck/integrations/nats"
)

// A publisher offloads the large body and sends the small one inline; the
// consumer hands both to the handler as plain bytes, then acks and
// releases the claim as the durable "billing".
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ccnats-example")
	defer func() { _ = os.RemoveAll(dir) }()

	// An embedded store and an embedded NATS server, for the example.
	store, err := engine.Open(ctx, engine.Config{Data: dir,
		Namespaces: map[string]claimcheck.Policy{"orders": {Threshold: 1024}}})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	srv, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	srv.Start()
	defer srv.Shutdown()
	srv.ReadyForConnections(10 * time.Second)
	nc, _ := natsgo.Connect(srv.ClientURL())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		panic(err)
	}

	pub, err := ccnats.NewPublisher(ctx, store, js, ccnats.PublisherConfig{Namespace: "orders"})
	if err != nil {
		panic(err)
	}
	if _, err := pub.Publish(ctx, "orders.created", bytes.Repeat([]byte("x"), 4096)); err != nil { // at the threshold or above: a ref
		panic(err)
	}
	if _, err := pub.Publish(ctx, "orders.created", []byte("small")); err != nil { // below: inline
		panic(err)
	}

	cons, _ := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy})
	c, err := ccnats.NewConsumer(store, cons, func(ctx context.Context, m *ccnats.Message) error {
		fmt.Printf("%d bytes, offloaded: %v\n", len(m.Body), m.Ref != nil)
		return nil // ack, then release
	}, ccnats.ConsumerConfig{})
	if err != nil {
		panic(err)
	}
	for range 2 {
		msg, err := cons.Next()
		if err != nil {
			panic(err)
		}
		out, err := c.Handle(ctx, msg)
		fmt.Println(out, err)
	}
	// Output:
	// 4096 bytes, offloaded: true
	// acked <nil>
	// 5 bytes, offloaded: false
	// acked <nil>
}
