package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/claimcheck/claimcheck"
	_ "github.com/claimcheck/claimcheck/blob/s3store" // the store's objects in MinIO
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// compatStore opens a store on a fake clock whose objects live in a MinIO
// bucket of their own: namespace "compat" stores payloads as they are
// and keeps a claim until released, "zstd" compresses.
func compatStore(t *testing.T) (*engine.Store, *clock.Fake, *s3.Client, string) {
	t.Helper()
	storage, s3c, bucket := testsvc.S3(t)
	clk := clock.NewFake(brokertest.Start)
	no := false
	store := enginetest.Open(t, engine.Config{
		Clock: clk, Storage: storage, Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{
			"compat": {Compression: claimcheck.CompressionNone, TTL: claimcheck.TTLPolicy{
				MaxAge: claimcheck.Duration(maxAge), DeleteAfterRead: &no, RetentionAfterRead: claimcheck.Duration(retention)}},
			"zstd": {Compression: claimcheck.CompressionZstd},
		},
	})
	return store, clk, s3c, bucket
}

// TestExtendedClientWriteLegacy: with LegacyAttribute and LegacyClass the
// publisher writes the first Java library's form, which consumers that
// read only SQSLargePayloadSize need: the size in SQSLargePayloadSize
// (and not in ExtendedPayloadSize), the legacy class name; a claimcheck
// consumer still reads it through its reference.
func TestExtendedClientWriteLegacy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.needS3(t)
	store, _, _, bucket := compatStore(t)
	url := e.queue(t, "legacy", nil)
	pub, err := NewPublisher(e.ctx, store, e.sqs, PublisherConfig{Namespace: "compat", Threshold: threshold,
		ExtendedClient: &ExtendedClientConfig{Bucket: bucket, LegacyAttribute: true, LegacyClass: true}})
	if err != nil {
		t.Fatal(err)
	}
	payload := brokertest.Text(8 << 10)
	e.send(t, pub, url, payload)
	msg := e.receive(t, url, 30)
	// Visible again at once, for the claimcheck consumer.
	if _, err := e.sqs.ChangeMessageVisibility(e.ctx, &awssqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: msg.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if _, current := msg.MessageAttributes[AttrPayloadSize]; current {
		t.Fatalf("%s set with LegacyAttribute: %+v", AttrPayloadSize, msg.MessageAttributes)
	}
	if size := msg.MessageAttributes[AttrLegacyPayloadSize]; aws.ToString(size.StringValue) != strconv.Itoa(len(payload)) {
		t.Fatalf("%s: %+v", AttrLegacyPayloadSize, msg.MessageAttributes)
	}
	if body := aws.ToString(msg.Body); !strings.HasPrefix(body, `["`+LegacyPointerClass+`",`) || !strings.Contains(body, bucket) {
		t.Fatalf("body %q is not the legacy pointer", body)
	}
	h, got := collect(nil)
	c, err := NewConsumer(e.ctx, store, e.sqs, url, h, ConsumerConfig{WaitTime: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if rs := pollUntil(t, c, 1); rs[0].Outcome != Acked || rs[0].Err != nil {
		t.Fatalf("%+v", rs[0])
	}
	if m := got()[0]; m.Ref == nil {
		t.Fatal("read without its reference")
	} else {
		brokertest.SameBody(t, m.Body, payload)
	}
}

// TestExtendedClientWrite: a publisher in Extended Client mode, over a
// store whose objects live in an S3 bucket, sends a message a plain SDK
// consumer reads the way the stock library does (follow the pointer,
// GetObject, check the size), and that a claimcheck consumer reads and
// releases through its reference. The object stays until the claim is
// finished, and the store deletes it then.
func TestExtendedClientWrite(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.needS3(t)
	store, clk, s3c, bucket := compatStore(t)

	if _, err := NewPublisher(e.ctx, store, e.sqs, PublisherConfig{Namespace: "zstd", ExtendedClient: &ExtendedClientConfig{Bucket: bucket}}); !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "compression: none") {
		t.Fatalf("a compressed namespace in Extended Client mode: %v", err)
	}
	url := e.queue(t, "compat", nil)
	pub, err := NewPublisher(e.ctx, store, e.sqs, PublisherConfig{Namespace: "compat", Threshold: threshold,
		ExtendedClient: &ExtendedClientConfig{Bucket: bucket}})
	if err != nil {
		t.Fatal(err)
	}
	payload := brokertest.Text(200 << 10)
	e.send(t, pub, url, payload)
	e.send(t, pub, url, payload)

	// The stock consumer's way, by hand with the SDK.
	msg := e.receive(t, url, 30)
	size, ok := msg.MessageAttributes[AttrPayloadSize]
	if !ok || aws.ToString(size.DataType) != "Number" || aws.ToString(size.StringValue) != strconv.Itoa(len(payload)) {
		t.Fatalf("size attribute %+v", msg.MessageAttributes)
	}
	var ptr []json.RawMessage
	var class string
	var loc struct {
		Bucket string `json:"s3BucketName"`
		Key    string `json:"s3Key"`
	}
	if json.Unmarshal([]byte(aws.ToString(msg.Body)), &ptr) != nil || len(ptr) != 2 ||
		json.Unmarshal(ptr[0], &class) != nil || json.Unmarshal(ptr[1], &loc) != nil || class != PointerClass || loc.Bucket != bucket {
		t.Fatalf("body %q is not the stock pointer", aws.ToString(msg.Body))
	}
	obj, err := s3c.GetObject(e.ctx, &s3.GetObjectInput{Bucket: aws.String(loc.Bucket), Key: aws.String(loc.Key)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj.Body)
	_ = obj.Body.Close() // read to the end
	if err != nil {
		t.Fatal(err)
	}
	brokertest.SameBody(t, string(got), payload)
	if _, err := e.sqs.DeleteMessage(e.ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: msg.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}

	// The claimcheck consumer's way: through the reference, then release.
	var ref claimcheck.Ref
	c, err := NewConsumer(e.ctx, store, e.sqs, url, func(_ context.Context, m *Message) error {
		brokertest.SameBody(t, m.Body, payload)
		ref = *m.Ref
		return nil
	}, ConsumerConfig{WaitTime: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if rs := pollUntil(t, c, 1); rs[0].Outcome != Acked || rs[0].Err != nil {
		t.Fatalf("%+v", rs[0])
	}
	info, err := store.Stat(e.ctx, ref)
	if err != nil || len(info.ReleasedBy) != 1 || info.Object == "" {
		t.Fatalf("after the release: %+v %v", info, err)
	}
	head := func() error {
		_, err := s3c.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(info.Object)})
		return err
	}
	if err := head(); err != nil {
		t.Fatalf("object gone inside the window: %v", err)
	}
	clk.Advance(retention + time.Second)
	for range 3 { // the claim, then its blob, then the object
		if _, err := store.SweepOnce(e.ctx, 1000); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
	}
	if err := head(); err == nil {
		t.Fatal("object still there after the claim was finished")
	}
}
