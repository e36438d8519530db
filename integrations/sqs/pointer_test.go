package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
)

// sendPointer stores payload at key in the test bucket and sends the
// message a stock Extended Client sends for it: body is the pointer, as
// format writes it, and the size attribute attr is a Number.
func (e *env) sendPointer(t *testing.T, url, key, payload, format, attr string) {
	t.Helper()
	if _, err := e.s3.PutObject(e.ctx, &s3.PutObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key), Body: strings.NewReader(payload)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sqs.SendMessage(e.ctx, &awssqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprintf(format, e.bucket, key)),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			attr: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(len(payload)))},
		},
	}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) objectExists(t *testing.T, key string) bool {
	t.Helper()
	_, err := e.s3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)})
	return err == nil
}

// TestExtendedClientPointers: messages written the way the stock
// libraries write them (the Java library's compact JSON and the Python
// library's spaced JSON; both class names; both size attributes) reach
// the handler as the original body. The S3 object stays unless the
// consumer is told to delete it, and then goes only after the message's
// delete.
func TestExtendedClientPointers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.needS3(t)
	const (
		java   = `["%s",{"s3BucketName":"%%s","s3Key":"%%s"}]`
		python = `["%s", {"s3BucketName": "%%s", "s3Key": "%%s"}]`
	)
	cases := []struct{ name, format, attr string }{
		{"java", fmt.Sprintf(java, PointerClass), AttrPayloadSize},
		{"java-legacy", fmt.Sprintf(java, LegacyPointerClass), AttrLegacyPayloadSize},
		{"python", fmt.Sprintf(python, PointerClass), AttrPayloadSize},
		{"python-legacy-attribute", fmt.Sprintf(python, PointerClass), AttrLegacyPayloadSize},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, del := range []bool{false, true} {
				url := e.queue(t, "pointer", nil)
				key := fmt.Sprintf("extended/%s-%v-%d", tc.name, del, time.Now().UnixNano())
				payload := brokertest.Text(300 << 10)
				e.sendPointer(t, url, key, payload, tc.format, tc.attr)
				h, got := collect(nil)
				c := e.consumer(t, e.sqs, url, h, ConsumerConfig{S3: e.s3, PointerSources: []PointerSource{{Bucket: e.bucket, Prefix: "extended/"}}, DeletePointerObjects: del})
				if rs := pollUntil(t, c, 1); rs[0].Outcome != Acked || rs[0].Err != nil {
					t.Fatalf("%+v", rs[0])
				}
				m := got()[0]
				brokertest.SameBody(t, m.Body, payload)
				if m.Pointer == nil || m.Pointer.Bucket != e.bucket || m.Pointer.Key != key || m.Ref != nil {
					t.Fatalf("pointer %+v, ref %v", m.Pointer, m.Ref)
				}
				if e.objectExists(t, key) == del {
					t.Fatalf("DeletePointerObjects %v: object exists %v", del, !del)
				}
			}
		})
	}
}

// TestExtendedClientPointerFailures: a pointer to a missing object is
// told to the handler and terminated; a pointer received without an S3
// client is left for redelivery, not dropped; a size attribute on a body
// that is no pointer is an error for the handler.
func TestExtendedClientPointerFailures(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.needS3(t)
	url := e.queue(t, "pointer-fail", nil)
	key := fmt.Sprintf("extended/missing-%d", time.Now().UnixNano())
	e.sendPointer(t, url, key, "payload", `["`+PointerClass+`",{"s3BucketName":"%s","s3Key":"%s"}]`, AttrPayloadSize)

	noS3 := e.consumer(t, e.sqs, url, func(context.Context, *Message) error {
		t.Error("handler ran without an S3 client")
		return nil
	}, ConsumerConfig{NakDelay: time.Second})
	if rs := pollUntil(t, noS3, 1); rs[0].Outcome != Nakked || !strings.Contains(rs[0].Err.Error(), "ConsumerConfig.S3") {
		t.Fatalf("without S3: %+v", rs[0])
	}

	if _, err := e.s3.DeleteObject(e.ctx, &s3.DeleteObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	h, got := collect(nil)
	c := e.consumer(t, e.sqs, url, h, ConsumerConfig{S3: e.s3, PointerSources: []PointerSource{{Bucket: e.bucket}}})
	if rs := pollUntil(t, c, 1); rs[0].Outcome != Terminated || !errors.Is(rs[0].Err, claimcheck.ErrNotFound) {
		t.Fatalf("missing object: %+v", rs[0])
	}
	if m := got()[0]; !errors.Is(m.Err, claimcheck.ErrNotFound) || m.Body != "" {
		t.Fatalf("handler got %+v", m)
	}

	for _, bad := range []string{"not json", `["java.lang.String",{"s3BucketName":"b","s3Key":"k"}]`, `["` + PointerClass + `",{}]`} {
		if _, err := e.sqs.SendMessage(e.ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(bad),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{AttrPayloadSize: {DataType: aws.String("Number"), StringValue: aws.String("3")}}}); err != nil {
			t.Fatal(err)
		}
		if rs := pollUntil(t, c, 1); rs[0].Outcome != Terminated || !errors.Is(rs[0].Err, claimcheck.ErrInvalidArgument) {
			t.Fatalf("body %q: %+v", bad, rs[0])
		}
	}
}
