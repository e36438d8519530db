package sqs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
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

type env struct {
	ctx    context.Context
	clock  *clock.Fake
	store  *engine.Store
	sqs    *awssqs.Client
	sns    *awssns.Client
	m      *Metrics
	s3     *s3.Client // nil without TEST_S3_URL
	bucket string
}

// setup opens an embedded store on a fake clock and clients of the goaws
// server at TEST_SQS_ENDPOINT (scripts/goaws.sh), and of MinIO at
// TEST_S3_URL when it is set.
func setup(t *testing.T) *env {
	t.Helper()
	endpoint := os.Getenv("TEST_SQS_ENDPOINT")
	if endpoint == "" {
		t.Skip("TEST_SQS_ENDPOINT is not set: start goaws with scripts/goaws.sh (scripts/test.sh does)")
	}
	ctx := t.Context()
	store, clk := brokertest.Open(t)
	e := &env{ctx: ctx, clock: clk, store: store, m: NewMetrics(prometheus.NewRegistry())}
	e.sqs, e.sns = awsClients(endpoint)
	e.s3, e.bucket = s3Client(t)
	return e
}

// awsClients returns SQS and SNS clients of the emulator at endpoint.
func awsClients(endpoint string) (*awssqs.Client, *awssns.Client) {
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	sq := awssqs.New(awssqs.Options{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(endpoint),
		APIOptions: []func(*middleware.Stack) error{goawsBatchNames}})
	sn := awssns.New(awssns.Options{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(endpoint)})
	return sq, sn
}

// goawsBatchNames renames the members of goaws's SendMessageBatch answer
// to those of SQS's JSON protocol (goaws v0.5.4 names them after the
// XML form: SendMessageBatchResultEntry and BatchResultErrorEntry), so
// the SDK sees which entries succeeded. It runs just before the SDK
// decodes the answer.
func goawsBatchNames(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("goawsBatchNames",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if err != nil || middleware.GetOperationName(ctx) != "SendMessageBatch" {
				return out, md, err
			}
			resp, ok := out.RawResponse.(*smithyhttp.Response)
			if !ok {
				return out, md, err
			}
			b, rerr := io.ReadAll(resp.Body)
			if rerr != nil {
				return out, md, rerr
			}
			_ = resp.Body.Close() // read to the end
			b = bytes.Replace(b, []byte(`"SendMessageBatchResultEntry"`), []byte(`"Successful"`), 1)
			b = bytes.Replace(b, []byte(`"BatchResultErrorEntry"`), []byte(`"Failed"`), 1)
			resp.Body = io.NopCloser(bytes.NewReader(b))
			return out, md, nil
		}), middleware.After)
}

// s3Client returns a client of the MinIO bucket at TEST_S3_URL, or nil
// without it.
func s3Client(tb testing.TB) (*s3.Client, string) {
	tb.Helper()
	raw := os.Getenv("TEST_S3_URL")
	if raw == "" {
		return nil, ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		tb.Fatalf("TEST_S3_URL: %v", err)
	}
	return testsvc.Client(tb, u), u.Host
}

func (e *env) needS3(t *testing.T) {
	t.Helper()
	if e.s3 == nil {
		t.Skip("TEST_S3_URL is not set: start MinIO with scripts/minio.sh (scripts/test.sh does)")
	}
}

var queueSeq atomic.Int64

// queue creates a queue of its own for the test (goaws keeps queues until
// it stops) and returns its URL.
func (e *env) queue(t *testing.T, name string, attrs map[string]string) string {
	t.Helper()
	name = fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), queueSeq.Add(1))
	if attrs == nil {
		attrs = map[string]string{}
	}
	if _, ok := attrs["VisibilityTimeout"]; !ok {
		attrs["VisibilityTimeout"] = "30"
	}
	out, err := e.sqs.CreateQueue(e.ctx, &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

func (e *env) publisher(t *testing.T, cfg PublisherConfig) *Publisher {
	t.Helper()
	cfg.Metrics = e.m
	p, err := NewPublisher(e.ctx, e.store, e.sqs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) consumer(t *testing.T, api SQSAPI, url string, h Handler, cfg ConsumerConfig) *Consumer {
	t.Helper()
	cfg.Metrics = e.m
	if cfg.WaitTime == 0 {
		cfg.WaitTime = 5 * time.Second
	}
	c, err := NewConsumer(e.ctx, e.store, api, url, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) send(t *testing.T, p *Publisher, url, body string) {
	t.Helper()
	if _, err := p.Send(e.ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
}

// receive long-polls the queue until it has a message (up to 10 tries of
// the given wait), as a plain SDK consumer does.
func (e *env) receive(t *testing.T, url string, visibility int32) sqstypes.Message {
	t.Helper()
	for range 10 {
		out, err := e.sqs.ReceiveMessage(e.ctx, &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 1, WaitTimeSeconds: 5,
			VisibilityTimeout: visibility, MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 1 {
			return out.Messages[0]
		}
	}
	t.Fatalf("no message in %s", url)
	return sqstypes.Message{}
}

// empty reports whether a long poll of wait seconds finds no message.
func (e *env) empty(t *testing.T, url string, wait int32) bool {
	t.Helper()
	out, err := e.sqs.ReceiveMessage(e.ctx, &awssqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: wait, MessageAttributeNames: []string{"All"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Messages) == 0
}

// failingSQS wraps a client and fails the calls a test chooses.
type failingSQS struct {
	SQSAPI
	failDelete atomic.Bool
	// failFirstEntry answers the first entry of a DeleteMessageBatch as
	// failed (without deleting it) and deletes the others.
	failFirstEntry atomic.Bool
}

func (f *failingSQS) DeleteMessage(ctx context.Context, in *awssqs.DeleteMessageInput, opts ...func(*awssqs.Options)) (*awssqs.DeleteMessageOutput, error) {
	if f.failDelete.Load() {
		return nil, fmt.Errorf("injected: delete refused")
	}
	return f.SQSAPI.DeleteMessage(ctx, in, opts...)
}

func (f *failingSQS) DeleteMessageBatch(ctx context.Context, in *awssqs.DeleteMessageBatchInput, opts ...func(*awssqs.Options)) (*awssqs.DeleteMessageBatchOutput, error) {
	if f.failDelete.Load() {
		return nil, fmt.Errorf("injected: delete refused")
	}
	if f.failFirstEntry.Load() && len(in.Entries) > 1 {
		rest := *in
		rest.Entries = in.Entries[1:]
		out, err := f.SQSAPI.DeleteMessageBatch(ctx, &rest, opts...)
		if err != nil {
			return nil, err
		}
		out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: in.Entries[0].Id, Code: aws.String("InjectedFailure"), SenderFault: false})
		return out, nil
	}
	return f.SQSAPI.DeleteMessageBatch(ctx, in, opts...)
}

// queueArn returns the ARN of the queue at url, as the server names it.
func (e *env) queueArn(t *testing.T, url string) string {
	t.Helper()
	out, err := e.sqs.GetQueueAttributes(e.ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatal(err)
	}
	arn := out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if !strings.HasSuffix(arn, ":"+queueName(url)) {
		t.Fatalf("queue %s: ARN %q", url, arn)
	}
	return arn
}
