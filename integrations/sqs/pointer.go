package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/claimcheck/claimcheck"
)

// The Amazon SQS Extended Client libraries' pointer: the body is a JSON
// array of the pointer's class name and {"s3BucketName", "s3Key"}, and a
// reserved Number attribute holds the payload's size.
const (
	// PointerClass is the class name the current libraries write.
	PointerClass = "software.amazon.payloadoffloading.PayloadS3Pointer"
	// LegacyPointerClass is the class name of the first Java library.
	LegacyPointerClass = "com.amazon.sqs.javamessaging.MessageS3Pointer"
	// AttrPayloadSize is the size attribute the current libraries write.
	AttrPayloadSize = "ExtendedPayloadSize"
	// AttrLegacyPayloadSize is the size attribute of the first libraries
	// (and of the current ones with the legacy attribute name chosen).
	AttrLegacyPayloadSize = "SQSLargePayloadSize"
)

// S3API is the part of *s3.Client (AWS SDK for Go v2) the consumer uses
// to read Extended Client pointers (and, with DeletePointerObjects, to
// delete their objects).
type S3API interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// Pointer is an Extended Client pointer to a payload in S3.
type Pointer struct {
	Class  string // PointerClass or LegacyPointerClass
	Bucket string
	Key    string
	Size   int64 // from the size attribute
}

type pointerLocation struct {
	Bucket string `json:"s3BucketName"`
	Key    string `json:"s3Key"`
}

// MarshalBody returns the message body the Extended Client writes for p:
// ["<class>",{"s3BucketName":"…","s3Key":"…"}].
func (p Pointer) MarshalBody() string {
	class := p.Class
	if class == "" {
		class = PointerClass
	}
	b, _ := json.Marshal([]any{class, pointerLocation{p.Bucket, p.Key}}) // strings only: cannot fail
	return string(b)
}

// pointerOf returns the pointer a message carries, or nil when it
// carries none (no size attribute). A size attribute with a body that is
// not a pointer is an error.
func pointerOf(body string, attrs map[string]sqstypes.MessageAttributeValue) (*Pointer, error) {
	name := AttrPayloadSize
	v, ok := attrs[name]
	if !ok {
		name = AttrLegacyPayloadSize
		if v, ok = attrs[name]; !ok {
			return nil, nil
		}
	}
	size, err := strconv.ParseInt(aws.ToString(v.StringValue), 10, 64)
	if err != nil || size < 0 {
		return nil, fmt.Errorf("%w: %s attribute %q is not a size", claimcheck.ErrInvalidArgument, name, aws.ToString(v.StringValue))
	}
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(body), &parts); err != nil || len(parts) != 2 {
		return nil, fmt.Errorf("%w: a message with the %s attribute has a body that is not an S3 pointer", claimcheck.ErrInvalidArgument, name)
	}
	p := Pointer{Size: size}
	var loc pointerLocation
	if json.Unmarshal(parts[0], &p.Class) != nil || json.Unmarshal(parts[1], &loc) != nil {
		return nil, fmt.Errorf("%w: a message with the %s attribute has a body that is not an S3 pointer", claimcheck.ErrInvalidArgument, name)
	}
	if p.Class != PointerClass && p.Class != LegacyPointerClass {
		return nil, fmt.Errorf("%w: S3 pointer class %q (want %s or %s)", claimcheck.ErrInvalidArgument, p.Class, PointerClass, LegacyPointerClass)
	}
	if loc.Bucket == "" || loc.Key == "" {
		return nil, fmt.Errorf("%w: S3 pointer without s3BucketName or s3Key", claimcheck.ErrInvalidArgument)
	}
	p.Bucket, p.Key = loc.Bucket, loc.Key
	return &p, nil
}

// readPointer fetches the payload p points at. A missing object or one of
// another size is a permanent error (ErrNotFound, ErrChecksumMismatch), and
// so is any other answer of S3 that no retry changes (s3Terminal: a 4xx
// about the request, ErrInvalidArgument); anything else may pass.
func readPointer(ctx context.Context, client S3API, p Pointer) (string, error) {
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.Bucket), Key: aws.String(p.Key)})
	if err != nil {
		var nsk *s3types.NoSuchKey
		var nsb *s3types.NoSuchBucket
		if errors.As(err, &nsk) || errors.As(err, &nsb) {
			return "", fmt.Errorf("s3://%s/%s: %w: %v", p.Bucket, p.Key, claimcheck.ErrNotFound, err)
		}
		if s3Terminal(err) {
			return "", fmt.Errorf("s3://%s/%s: %w: S3 refused the read: %v", p.Bucket, p.Key, claimcheck.ErrInvalidArgument, err)
		}
		return "", fmt.Errorf("%w: get s3://%s/%s: %v", claimcheck.ErrUnavailable, p.Bucket, p.Key, err)
	}
	defer func() { _ = out.Body.Close() }() // read to the end or failed; nothing to flush
	b, err := io.ReadAll(io.LimitReader(out.Body, p.Size+1))
	if err != nil {
		return "", fmt.Errorf("%w: read s3://%s/%s: %v", claimcheck.ErrUnavailable, p.Bucket, p.Key, err)
	}
	if int64(len(b)) != p.Size {
		return "", fmt.Errorf("s3://%s/%s: %w: the object is not the %d bytes the pointer announces", p.Bucket, p.Key, claimcheck.ErrChecksumMismatch, p.Size)
	}
	return string(b), nil
}
