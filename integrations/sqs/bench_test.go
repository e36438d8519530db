package sqs

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/server"
	"github.com/claimcheck/claimcheck/sweep"
)

// BenchmarkRoundTrip sends, receives and deletes one message per round
// through goaws, with the payload in MinIO, two ways, alternating round
// by round in one process:
//
//   - envelope: Publisher.Send and Consumer.Poll through the Go client
//     of a claimcheck server (over HTTP, objects in the MinIO bucket,
//     metadata in SQLite): put, SendMessage; ReceiveMessage, redeem,
//     DeleteMessage, release;
//   - sdk: the same round by hand with the SDKs, as the Extended Client
//     does it: PutObject, SendMessage; ReceiveMessage, GetObject,
//     DeleteMessage.
//
// envelope/sdk-speed is the hand-made round's time over the envelope's
// (above 1: the envelope is faster); compare it, not the absolute
// numbers (docs/PERFORMANCE.md, "SQS and SNS"):
//
//	go test -run '^$' -bench RoundTrip -benchtime 20x ./integrations/sqs
func BenchmarkRoundTrip(b *testing.B) {
	endpoint := os.Getenv("TEST_SQS_ENDPOINT")
	if endpoint == "" || os.Getenv("TEST_S3_URL") == "" {
		b.Skip("TEST_SQS_ENDPOINT and TEST_S3_URL are not set: start goaws and MinIO (scripts/goaws.sh, scripts/minio.sh)")
	}
	ctx := b.Context()
	sq, _ := awsClients(endpoint)
	storage, s3c, bucket := testsvc.S3(b)
	store := enginetest.Open(b, engine.Config{
		Storage: storage, Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{"bench": {Compression: claimcheck.CompressionNone, MaxSize: 64 << 20}},
	})
	srv := httptest.NewServer(server.New(server.Config{Claims: store}))
	b.Cleanup(srv.Close)
	remote, err := client.New(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	newQueue := func(name string) string {
		out, err := sq.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("bench-%s-%d", name, time.Now().UnixNano()))})
		if err != nil {
			b.Fatal(err)
		}
		return aws.ToString(out.QueueUrl)
	}

	for _, size := range []int{1 << 20, 10 << 20} {
		payload := brokertest.Text(size)
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			envURL, sdkURL := newQueue("envelope"), newQueue("sdk")
			pub, err := NewPublisher(ctx, remote, sq, PublisherConfig{Namespace: "bench", Threshold: 256 << 10})
			if err != nil {
				b.Fatal(err)
			}
			c, err := NewConsumer(ctx, remote, sq, envURL, func(_ context.Context, m *Message) error {
				if len(m.Body) != size {
					return fmt.Errorf("got %d bytes", len(m.Body))
				}
				return nil
			}, ConsumerConfig{MaxMessages: 1, WaitTime: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			envelope := func() {
				if _, err := pub.Send(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(envURL), MessageBody: aws.String(payload)}); err != nil {
					b.Fatal(err)
				}
				for done := false; !done; {
					rs, err := c.Poll(ctx)
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range rs {
						if r.Outcome != Acked {
							b.Fatalf("%+v", r)
						}
						done = true
					}
				}
			}
			i := 0
			byHand := func() {
				i++
				key := "bench/" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
				if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(payload)}); err != nil {
					b.Fatal(err)
				}
				ptr := Pointer{Bucket: bucket, Key: key}
				if _, err := sq.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(sdkURL), MessageBody: aws.String(ptr.MarshalBody())}); err != nil {
					b.Fatal(err)
				}
				for {
					out, err := sq.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(sdkURL), MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
					if err != nil {
						b.Fatal(err)
					}
					if len(out.Messages) == 0 {
						continue
					}
					obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
					if err != nil {
						b.Fatal(err)
					}
					got, err := io.ReadAll(obj.Body)
					_ = obj.Body.Close() // read to the end
					if err != nil || len(got) != size {
						b.Fatalf("got %d bytes: %v", len(got), err)
					}
					if _, err := sq.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(sdkURL), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
						b.Fatal(err)
					}
					return
				}
			}
			// The two rounds alternate, so both see the same load.
			var tEnv, tSDK time.Duration
			b.SetBytes(int64(2 * size))
			for b.Loop() {
				start := time.Now()
				envelope()
				mid := time.Now()
				byHand()
				tEnv, tSDK = tEnv+mid.Sub(start), tSDK+time.Since(mid)
			}
			b.ReportMetric(float64(tEnv.Milliseconds())/float64(b.N), "envelope-ms/op")
			b.ReportMetric(float64(tSDK.Milliseconds())/float64(b.N), "sdk-ms/op")
			b.ReportMetric(tSDK.Seconds()/tEnv.Seconds(), "envelope/sdk-speed")
		})
	}
}
