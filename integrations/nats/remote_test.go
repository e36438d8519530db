package nats

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
	"github.com/claimcheck/claimcheck/server"
)

// TestRemoteClient runs publisher and consumer against a claimcheck
// server through the Go client: the envelope works the same, and a gone
// claim reaches the handler as a *GoneError with its reason across the
// wire.
func TestRemoteClient(t *testing.T) {
	e := setup(t)
	srv := httptest.NewServer(server.New(server.Config{Claims: e.store}))
	t.Cleanup(srv.Close)
	remote, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	pub, err := NewPublisher(e.ctx, remote, e.js, PublisherConfig{Namespace: nsWindow})
	if err != nil {
		t.Fatal(err)
	}
	if pub.Threshold() != threshold {
		t.Fatalf("threshold read from the server = %d, want %d", pub.Threshold(), threshold)
	}
	payload := brokertest.Body(40 << 10)
	if _, err := pub.Publish(e.ctx, "orders.created", payload); err != nil {
		t.Fatal(err)
	}
	cons := e.durable(t, "billing")
	var told error
	var ref claimcheck.Ref
	c, err := NewConsumer(remote, cons, func(_ context.Context, m *Message) error {
		if m.Err != nil {
			told = m.Err
			return nil
		}
		brokertest.SameBody(t, m.Body, payload)
		ref = *m.Ref
		return errors.New("not yet")
	}, ConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := c.Handle(e.ctx, next(t, cons)); out != Nakked {
		t.Fatalf("first delivery: %s", out)
	}
	// Stat (through the client) waits for the store's batched read
	// receipts, so the read is on record before the clock jumps.
	if info, err := remote.Stat(e.ctx, ref); err != nil || info.Reads != 1 {
		t.Fatalf("after the first delivery: %+v, %v", info, err)
	}
	e.clock.Advance(retention + time.Second)
	if out, err := c.Handle(e.ctx, next(t, cons)); out != Terminated || !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("after the window: %s, %v", out, err)
	}
	var gone *claimcheck.GoneError
	if !errors.As(told, &gone) || gone.Reason != claimcheck.ReasonReadRetention {
		t.Fatalf("handler was told %v, want gone (read_retention_over)", told)
	}
}
