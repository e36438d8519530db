package sqs_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	ccsqs "github.com/claimcheck/claimcheck/integrations/sqs"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/server"
)

// TestTour runs the README's publisher and consumer against a claimcheck
// server (in-process, over HTTP with the Go client) and goaws.
func TestTour(t *testing.T) {
	t.Parallel()
	endpoint := os.Getenv("TEST_SQS_ENDPOINT")
	if endpoint == "" {
		t.Skip("TEST_SQS_ENDPOINT is not set: start goaws with scripts/goaws.sh (scripts/test.sh does)")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	store := enginetest.Open(t, engine.Config{Namespaces: map[string]claimcheck.Policy{"orders": {}}})
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	t.Cleanup(srv.Close)

	// The README, with the endpoint of the emulator.
	claims, _ := client.New(srv.URL)
	queue := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	q, err := queue.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("tour-%d", time.Now().UnixNano()))})
	if err != nil {
		t.Fatal(err)
	}
	queueURL := aws.ToString(q.QueueUrl)
	order := strings.Repeat("order line\n", 50_000) // 550 KB

	pub, err := ccsqs.NewPublisher(ctx, claims, queue, ccsqs.PublisherConfig{
		Namespace: "orders",
		Threshold: 256 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pub.Send(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(queueURL),
		MessageBody: aws.String(order),
	})
	if err != nil {
		t.Fatal(err)
	}

	done := make(chan string, 1)
	process := func(_ context.Context, body string) error {
		done <- body
		cancel()
		return nil
	}
	c, err := ccsqs.NewConsumer(ctx, claims, queue, queueURL, func(ctx context.Context, m *ccsqs.Message) error {
		if m.Err != nil {
			var gone *claimcheck.GoneError
			if errors.As(m.Err, &gone) {
				t.Errorf("payload gone: claim %s, %s", m.Ref.ID, gone.Reason)
			}
			return nil
		}
		return process(ctx, m.Body)
	}, ccsqs.ConsumerConfig{
		NakDelay: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != order {
		t.Fatalf("got %d bytes, want %d", len(got), len(order))
	}
	// Run stopped with ctx; the delete and release ran on a context of
	// their own, so the message is gone from the queue.
	out, err := queue.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 1})
	if err != nil || len(out.Messages) != 0 {
		t.Fatalf("queue after the tour: %v, %d messages", err, len(out.Messages))
	}
}
