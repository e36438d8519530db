package nats

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/sweep"
)

// The benchmarks run end to end on one embedded server with file
// storage: a goroutine publishes b.N messages while the benchmark
// goroutine consumes them through a pull consumer, resolving and acking
// (DoubleAck) each. They report messages per second. Both variants of a
// benchmark run in the same process, side by side, so compare their
// ratio rather than the absolute numbers. See docs/PERFORMANCE-HISTORY.md,
// "Messaging: NATS JetStream envelope".
//
//	go test -run '^$' -bench . -benchtime 3s ./integrations/nats

type benchEnv struct {
	ctx   context.Context
	store *engine.Store
	js    jetstream.JetStream
}

func setupBench(b *testing.B) *benchEnv {
	b.Helper()
	ctx := b.Context()
	// Real clock, files under a temp dir; bodies are random (they do not
	// compress), so compression is off on both sides.
	store := enginetest.Open(b, engine.Config{
		Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{
			"bench": {Threshold: 64 << 10, Compression: claimcheck.Compression("none")},
		},
	})
	_, _, js := startNATS(b)
	return &benchEnv{ctx: ctx, store: store, js: js}
}

// pipe runs publish(i) for i in [0, b.N) in a goroutine and consume(msg)
// for each of the b.N messages the durable consumer of subject gets.
func (e *benchEnv) pipe(b *testing.B, stream, subject string, publish func(i int) error, consume func(jetstream.Msg) error) {
	b.Helper()
	if _, err := e.js.CreateStream(e.ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}}); err != nil {
		b.Fatal(err)
	}
	cons, err := e.js.CreateOrUpdateConsumer(e.ctx, stream, jetstream.ConsumerConfig{Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(64))
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	b.ResetTimer()
	perr := make(chan error, 1)
	go func() {
		for i := range b.N {
			if err := publish(i); err != nil {
				perr <- err
				return
			}
		}
		perr <- nil
	}()
	for range b.N {
		msg, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		if err := consume(msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-perr; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// stamped returns a copy of base whose first bytes are replaced by i for
// each call, so every body is distinct (no dedup) at the cost of one copy.
func stamped(base []byte) func(i int) []byte {
	buf := append([]byte(nil), base...)
	return func(i int) []byte {
		binary.LittleEndian.PutUint64(buf, uint64(i))
		return buf
	}
}

// BenchmarkLarge1MiB: 1 MiB bodies through the envelope (the body goes to
// the claim store, the message carries the reference; the consumer
// redeems, acks, releases) against the same bodies through a JetStream
// object store bucket (put the object, publish its name; the consumer
// gets it, deletes it, acks).
func BenchmarkLarge1MiB(b *testing.B) {
	base := brokertest.Body(1 << 20)
	b.Run("envelope", func(b *testing.B) {
		e := setupBench(b)
		b.SetBytes(int64(len(base)))
		pub, err := NewPublisher(e.ctx, e.store, e.js, PublisherConfig{Namespace: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		var c *Consumer
		next := stamped(base)
		e.pipe(b, "ENV", "env.>", func(i int) error {
			_, err := pub.Publish(e.ctx, "env.big", next(i))
			return err
		}, func(msg jetstream.Msg) error {
			if c == nil {
				if c, err = NewConsumer(e.store, mustConsumer(b, e, "ENV"), func(context.Context, *Message) error { return nil }, ConsumerConfig{}); err != nil {
					return err
				}
			}
			if out, err := c.Handle(e.ctx, msg); out != Acked || err != nil {
				return fmt.Errorf("handle: %s, %w", out, err)
			}
			return nil
		})
	})
	b.Run("objectstore", func(b *testing.B) {
		e := setupBench(b)
		b.SetBytes(int64(len(base)))
		obj, err := e.js.CreateObjectStore(e.ctx, jetstream.ObjectStoreConfig{Bucket: "bodies"})
		if err != nil {
			b.Fatal(err)
		}
		next := stamped(base)
		e.pipe(b, "OBJ", "obj.>", func(i int) error {
			name := fmt.Sprintf("body-%d", i)
			if _, err := obj.PutBytes(e.ctx, name, next(i)); err != nil {
				return err
			}
			_, err := e.js.Publish(e.ctx, "obj.big", []byte(name))
			return err
		}, func(msg jetstream.Msg) error {
			name := string(msg.Data())
			data, err := obj.GetBytes(e.ctx, name)
			if err != nil {
				return err
			}
			if len(data) != len(base) {
				return fmt.Errorf("object %s: %d bytes", name, len(data))
			}
			if err := obj.Delete(e.ctx, name); err != nil {
				return err
			}
			return msg.DoubleAck(e.ctx)
		})
	})
}

// BenchmarkSmallInline: 1 KiB bodies (under the threshold, so inline)
// through the envelope's Publisher and Consumer against plain JetStream
// publish and ack: the cost of the envelope when it does nothing.
func BenchmarkSmallInline(b *testing.B) {
	base := brokertest.Body(1 << 10)
	b.Run("envelope", func(b *testing.B) {
		e := setupBench(b)
		pub, err := NewPublisher(e.ctx, e.store, e.js, PublisherConfig{Namespace: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		var c *Consumer
		e.pipe(b, "ENV", "env.>", func(int) error {
			_, err := pub.Publish(e.ctx, "env.small", base)
			return err
		}, func(msg jetstream.Msg) error {
			if c == nil {
				if c, err = NewConsumer(e.store, mustConsumer(b, e, "ENV"), func(context.Context, *Message) error { return nil }, ConsumerConfig{}); err != nil {
					return err
				}
			}
			if out, err := c.Handle(e.ctx, msg); out != Acked || err != nil {
				return fmt.Errorf("handle: %s, %w", out, err)
			}
			return nil
		})
	})
	b.Run("plain", func(b *testing.B) {
		e := setupBench(b)
		e.pipe(b, "RAW", "raw.>", func(int) error {
			_, err := e.js.PublishMsg(e.ctx, &natsgo.Msg{Subject: "raw.small", Data: base})
			return err
		}, func(msg jetstream.Msg) error {
			return msg.DoubleAck(e.ctx)
		})
	})
}

func mustConsumer(b *testing.B, e *benchEnv, stream string) jetstream.Consumer {
	cons, err := e.js.Consumer(e.ctx, stream, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return cons
}

// lane is one way of sending a body: send publishes body i, recv
// consumes and settles the message it gets.
type lane struct {
	send func(i int) error
	recv func(jetstream.Msg) error
	it   jetstream.MessagesContext
	took []time.Duration // per message
}

// rate is messages per second at the lane's median message time: on a
// shared machine a few stalls would dominate a mean, and they hit
// whichever lane happened to be running.
func (l *lane) rate() float64 {
	slices.Sort(l.took)
	return 1 / l.took[len(l.took)/2].Seconds()
}

// interleave alternates one message through a and one through b, b.N
// times, timing each lane alone, so that both see the same machine load
// (the benchmark machine is shared). It reports both rates (at the
// median message time) and their ratio.
func interleave(b *testing.B, name1 string, a *lane, name2 string, c *lane) {
	b.Helper()
	b.ResetTimer()
	for i := range b.N {
		order := []*lane{a, c}
		if i%2 == 1 { // which lane goes first alternates: no order effect
			order[0], order[1] = c, a
		}
		for _, l := range order {
			start := time.Now()
			if err := l.send(i); err != nil {
				b.Fatal(err)
			}
			msg, err := l.it.Next()
			if err != nil {
				b.Fatal(err)
			}
			if err := l.recv(msg); err != nil {
				b.Fatal(err)
			}
			l.took = append(l.took, time.Since(start))
		}
	}
	b.StopTimer()
	ra, rc := a.rate(), c.rate()
	b.ReportMetric(ra, name1+"-msgs/s")
	b.ReportMetric(rc, name2+"-msgs/s")
	b.ReportMetric(ra/rc, "ratio")
}

// messages creates stream with subject and a durable pull consumer on it,
// and returns its message iterator.
func (e *benchEnv) messages(b *testing.B, stream, subject string) jetstream.MessagesContext {
	b.Helper()
	if _, err := e.js.CreateStream(e.ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}}); err != nil {
		b.Fatal(err)
	}
	cons, err := e.js.CreateOrUpdateConsumer(e.ctx, stream, jetstream.ConsumerConfig{Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(it.Stop)
	return it
}

func (e *benchEnv) envelopeLane(b *testing.B, subject string, data func(i int) []byte) *lane {
	b.Helper()
	pub, err := NewPublisher(e.ctx, e.store, e.js, PublisherConfig{Namespace: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	it := e.messages(b, "ENV", subject)
	c, err := NewConsumer(e.store, mustConsumer(b, e, "ENV"), func(context.Context, *Message) error { return nil }, ConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	return &lane{it: it,
		send: func(i int) error { _, err := pub.Publish(e.ctx, subject, data(i)); return err },
		recv: func(msg jetstream.Msg) error {
			if out, err := c.Handle(e.ctx, msg); out != Acked || err != nil {
				return fmt.Errorf("handle: %s, %w", out, err)
			}
			return nil
		}}
}

// BenchmarkInterleaved is the side-by-side comparison quoted in
// docs/PERFORMANCE-HISTORY.md: one message at a time (publish, receive, settle),
// alternating between the two ways, on one server and one store.
func BenchmarkInterleaved(b *testing.B) {
	b.Run("1MiB/envelope-vs-objectstore", func(b *testing.B) {
		e := setupBench(b)
		base := brokertest.Body(1 << 20)
		env := e.envelopeLane(b, "env.big", stamped(base))
		obj, err := e.js.CreateObjectStore(e.ctx, jetstream.ObjectStoreConfig{Bucket: "bodies"})
		if err != nil {
			b.Fatal(err)
		}
		next := stamped(base)
		os := &lane{it: e.messages(b, "OBJ", "obj.big"),
			send: func(i int) error {
				name := fmt.Sprintf("body-%d", i)
				if _, err := obj.PutBytes(e.ctx, name, next(i)); err != nil {
					return err
				}
				_, err := e.js.Publish(e.ctx, "obj.big", []byte(name))
				return err
			},
			recv: func(msg jetstream.Msg) error {
				name := string(msg.Data())
				data, err := obj.GetBytes(e.ctx, name)
				if err != nil {
					return err
				}
				if len(data) != len(base) {
					return fmt.Errorf("object %s: %d bytes", name, len(data))
				}
				if err := obj.Delete(e.ctx, name); err != nil {
					return err
				}
				return msg.DoubleAck(e.ctx)
			}}
		interleave(b, "envelope", env, "objectstore", os)
	})
	b.Run("1KiB/envelope-vs-plain", func(b *testing.B) {
		e := setupBench(b)
		base := brokertest.Body(1 << 10)
		env := e.envelopeLane(b, "env.small", func(int) []byte { return base })
		plain := &lane{it: e.messages(b, "RAW", "raw.small"),
			send: func(int) error {
				_, err := e.js.PublishMsg(e.ctx, &natsgo.Msg{Subject: "raw.small", Data: base})
				return err
			},
			recv: func(msg jetstream.Msg) error { return msg.DoubleAck(e.ctx) }}
		interleave(b, "envelope", env, "plain", plain)
	})
}
