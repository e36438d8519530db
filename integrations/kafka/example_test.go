package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	cckafka "github.com/claimcheck/claimcheck/integrations/kafka"
)

// A publisher offloads the large value and sends the small one inline; a
// group member hands both to the handler as plain bytes, commits them and
// releases the claim as the group "billing".
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "cckafka-example")
	defer func() { _ = os.RemoveAll(dir) }()

	// An embedded store and an in-process Kafka, for the example.
	store, err := engine.Open(ctx, engine.Config{Data: dir,
		Namespaces: map[string]claimcheck.Policy{"orders": {Threshold: 1024}}})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	cluster, _ := kfake.NewCluster(kfake.SeedTopics(1, "orders"))
	defer cluster.Close()
	kc, _ := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	defer kc.Close()

	pub, err := cckafka.NewPublisher(ctx, store, kc, cckafka.PublisherConfig{Namespace: "orders"})
	if err != nil {
		panic(err)
	}
	err = pub.Publish(ctx,
		&kgo.Record{Topic: "orders", Value: bytes.Repeat([]byte("x"), 4096)}, // a ref
		&kgo.Record{Topic: "orders", Value: []byte("small")})                 // inline
	if err != nil {
		panic(err)
	}

	seen := 0
	c, err := cckafka.NewConsumer(store, func(ctx context.Context, m *cckafka.Message) error {
		fmt.Printf("%d bytes, offloaded: %v\n", len(m.Body), m.Ref != nil)
		if seen++; seen == 2 {
			cancel() // Run commits and releases this poll, then returns
		}
		return nil
	}, cckafka.ConsumerConfig{Group: "billing", Topics: []string{"orders"}},
		kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Println(c.Run(ctx))
	// Output:
	// 4096 bytes, offloaded: true
	// 5 bytes, offloaded: false
	// <nil>
}
