package sqs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// sendRawPointer sends a stock pointer to s3://bucket/key announcing
// size bytes, without storing anything.
func (e *env) sendRawPointer(t *testing.T, url, bucket, key string, size int) {
	t.Helper()
	if _, err := e.sqs.SendMessage(e.ctx, &awssqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(Pointer{Bucket: bucket, Key: key}.MarshalBody()),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			AttrPayloadSize: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(size))},
		},
	}); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, c *s3.Client, bucket, key string) bool {
	t.Helper()
	_, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return err == nil
}

// TestPointerSources: the consumer follows only pointers into its
// PointerSources (ADR 0272). A pointer into another bucket, or outside
// the allowed prefix, or with a key that is not a plain object key, is
// terminal: the handler is told, gets no bytes, and the object is neither
// read nor deleted, even with DeletePointerObjects.
func TestPointerSources(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.needS3(t)
	_, _, other := testsvc.S3(t)
	const secret = "the other bucket's object"
	for _, loc := range []struct{ bucket, key string }{{other, "extended/secret"}, {e.bucket, "private/secret"}} {
		if _, err := e.s3.PutObject(e.ctx, &s3.PutObjectInput{Bucket: aws.String(loc.bucket), Key: aws.String(loc.key), Body: strings.NewReader(secret)}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct{ name, bucket, key string }{
		{"another bucket", other, "extended/secret"},
		{"outside the prefix", e.bucket, "private/secret"},
		{"dot-dot out of the prefix", e.bucket, "extended/../private/secret"},
		{"leading slash", e.bucket, "/extended/secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := e.queue(t, "pointer-source", nil)
			e.sendRawPointer(t, url, tc.bucket, tc.key, len(secret))
			h, got := collect(nil)
			c := e.consumer(t, e.sqs, url, h, ConsumerConfig{S3: e.s3, DeletePointerObjects: true,
				PointerSources: []PointerSource{{Bucket: e.bucket, Prefix: "extended/"}}})
			if rs := pollUntil(t, c, 1); rs[0].Outcome != Terminated || !errors.Is(rs[0].Err, ErrPointerNotAllowed) || !errors.Is(rs[0].Err, claimcheck.ErrInvalidArgument) {
				t.Fatalf("%+v", rs[0])
			}
			if m := got()[0]; m.Body != "" || !errors.Is(m.Err, ErrPointerNotAllowed) {
				t.Fatalf("handler got body %q, err %v", m.Body, m.Err)
			}
			if !exists(t, e.s3, other, "extended/secret") || !exists(t, e.s3, e.bucket, "private/secret") {
				t.Fatal("an object outside PointerSources was deleted")
			}
			if !e.empty(t, url, 1) {
				t.Fatal("the refused message came back")
			}
		})
	}

	if _, err := NewConsumer(e.ctx, e.store, e.sqs, e.queue(t, "no-sources", nil), func(context.Context, *Message) error { return nil },
		ConsumerConfig{S3: e.s3}); !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "PointerSources") {
		t.Fatalf("S3 without PointerSources: %v", err)
	}
	for _, bad := range []PointerSource{{Prefix: "extended/"}, {Bucket: "b", Prefix: "../"}, {Bucket: "b", Prefix: "/x"}} {
		if _, err := NewConsumer(e.ctx, e.store, e.sqs, e.queue(t, "bad-source", nil), func(context.Context, *Message) error { return nil },
			ConsumerConfig{S3: e.s3, PointerSources: []PointerSource{bad}}); !errors.Is(err, claimcheck.ErrInvalidArgument) {
			t.Fatalf("PointerSources %+v: %v", bad, err)
		}
	}
}

// TestPointerS3Refusal: a pointer inside PointerSources whose read S3
// refuses with a 4xx (here a key longer than S3 takes) is terminal,
// not left to come back forever.
func TestPointerS3Refusal(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.needS3(t)
	url := e.queue(t, "pointer-4xx", nil)
	e.sendRawPointer(t, url, e.bucket, "extended/"+strings.Repeat("k", 1100), 10)
	h, got := collect(nil)
	c := e.consumer(t, e.sqs, url, h, ConsumerConfig{S3: e.s3, PointerSources: []PointerSource{{Bucket: e.bucket, Prefix: "extended/"}}})
	if rs := pollUntil(t, c, 1); rs[0].Outcome != Terminated || !errors.Is(rs[0].Err, claimcheck.ErrInvalidArgument) {
		t.Fatalf("%+v", rs[0])
	}
	if m := got()[0]; m.Err == nil || m.Body != "" {
		t.Fatalf("handler got %+v", m)
	}
}

// TestPointerToStoreObject: a pointer naming an object of a claimcheck
// store (as a publisher in Extended Client mode writes, here received
// without its reference attribute) is read, but DeletePointerObjects
// leaves the object to the store: the claim stays redeemable.
func TestPointerToStoreObject(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.needS3(t)
	storage, s3c, bucket := testsvc.S3(t)
	no := false
	store := enginetest.Open(t, engine.Config{
		Clock: clock.NewFake(brokertest.Start), Storage: storage, Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{"plain": {Compression: claimcheck.CompressionNone,
			TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(maxAge), DeleteAfterRead: &no}}},
	})
	payload := brokertest.Text(4 << 10)
	ref, err := store.Put(e.ctx, "plain", strings.NewReader(payload), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := store.Stat(e.ctx, ref)
	if err != nil || info.Object == "" {
		t.Fatalf("stat: %+v %v", info, err)
	}
	if !storeOwnedKey(info.Object) {
		t.Fatalf("storeOwnedKey(%q) is false for a store's object", info.Object)
	}
	url := e.queue(t, "pointer-store", nil)
	e.sendRawPointer(t, url, bucket, info.Object, len(payload))
	h, got := collect(nil)
	c := e.consumer(t, e.sqs, url, h, ConsumerConfig{S3: s3c, DeletePointerObjects: true, PointerSources: []PointerSource{{Bucket: bucket}}})
	if rs := pollUntil(t, c, 1); rs[0].Outcome != Acked || rs[0].Err != nil {
		t.Fatalf("%+v", rs[0])
	}
	brokertest.SameBody(t, got()[0].Body, payload)
	if !exists(t, s3c, bucket, info.Object) {
		t.Fatalf("the consumer deleted the store's object %s", info.Object)
	}
	if body, err := claimcheck.Resolve(e.ctx, store, claimcheck.Value{Ref: &ref}); err != nil || !bytes.Equal(body, []byte(payload)) {
		t.Fatalf("redeem after the pointer's message: %v", err)
	}
}

// TestStoreOwnedKey: the names of a store's objects and markers, in both
// layouts and under a storage prefix, and names that only look alike.
func TestStoreOwnedKey(t *testing.T) {
	id := "b_" + strings.Repeat("A", blobIDChars)
	for key, want := range map[string]bool{
		"orders/3f/" + id:             true,
		"orders/" + id:                true,
		"orders/3f/" + id + ".k1":     true,
		"prefix/orders/3f/" + id:      true,
		".claimcheck-store":           true,
		"p/.claimcheck-store.store-2": true,
		"extended/report.pdf":         false,
		"orders/3f/" + id + "x":       false,
		"orders/b_short":              false,
		fmt.Sprintf("x/b_%s", strings.Repeat("!", blobIDChars)): false,
	} {
		if got := storeOwnedKey(key); got != want {
			t.Errorf("storeOwnedKey(%q) = %v, want %v", key, got, want)
		}
	}
}
