package s3store

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// s3IdleConnsPerHost is how many idle connections to the S3 endpoint the
// client keeps. The SDK keeps 10, so a server with more concurrent puts
// than that closes the surplus after each request and dials again for
// the next one (a handshake, and over TLS a TLS handshake, per object).
const s3IdleConnsPerHost = 256

// s3SocketBuffer is the size of the HTTP transport's write and read
// buffers (the default is 4 KiB): objects are large, and bigger buffers
// mean fewer system calls per megabyte.
const s3SocketBuffer = 64 << 10

// open opens an s3:// URL. gocloud parses and validates the URL and
// builds the SDK client from it (endpoint, region, profile, checksum
// settings, ...); that client is then tuned (s3Client) and the bucket is
// opened again over the tuned client, so that gocloud's calls and ours
// share one connection pool.
func open(ctx context.Context, u *url.URL) (blob.Store, error) {
	probe, err := gcblob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("blob: open %s: %w", gocloudbucket.Redact(u), err)
	}
	var base *s3.Client
	ok := probe.As(&base)
	_ = probe.Close()
	if !ok {
		return nil, fmt.Errorf("blob: open %s: no S3 client behind the bucket", gocloudbucket.Redact(u))
	}
	q := u.Query()
	client := s3Client(base, checksumsChosen(q))
	sse := sseOf(q)
	b, err := s3blob.OpenBucket(ctx, client, u.Host, &s3blob.Options{
		EncryptionType:             sse.typ,
		KMSEncryptionID:            sse.kmsKeyID,
		RequestChecksumCalculation: client.Options().RequestChecksumCalculation,
	})
	if err != nil {
		return nil, fmt.Errorf("blob: open %s: %w", gocloudbucket.Redact(u), err)
	}
	return &Bucket{Bucket: gocloudbucket.New(b, gocloudbucket.Options{StartAfter: startAfter}), client: client, name: u.Host, sse: sse}, nil
}

// s3Client returns a copy of base tuned for claimcheck:
//
//   - The connection pool keeps s3IdleConnsPerHost idle connections.
//   - Flexible checksums (CRC32 computed on every upload, validated on
//     every download) are only used "when required", unless chosen says
//     the configuration asked for them (checksumsChosen). claimcheck
//     records the sha256 of every payload at put and verifies it on every
//     redeem and scrub, end to end, which covers what the SDK's checksum
//     covers (the bytes between the SDK and the service) and the storage
//     itself; the SDK's pass over every byte is redundant work. Over plain
//     HTTP the payload is still signed (SigV4 hashes it, and the service
//     checks it), so a request altered on the way is still refused.
//   - Over HTTPS, object bodies are sent unsigned (unsignedPayload).
func s3Client(base *s3.Client, chosen checksumChoice) *s3.Client {
	o := base.Options()
	if !chosen.request {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}
	if !chosen.response {
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	// The SDK's default client is a BuildableClient (which may carry a
	// custom CA bundle); a client configured some other way is kept.
	if hc, ok := o.HTTPClient.(*awshttp.BuildableClient); ok {
		o.HTTPClient = hc.WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns = max(t.MaxIdleConns, s3IdleConnsPerHost)
			t.MaxIdleConnsPerHost = s3IdleConnsPerHost
			t.WriteBufferSize, t.ReadBufferSize = s3SocketBuffer, s3SocketBuffer
		})
	}
	tls := !o.EndpointOptions.DisableHTTPS
	if o.BaseEndpoint != nil {
		tls = strings.HasPrefix(strings.ToLower(aws.ToString(o.BaseEndpoint)), "https://")
	}
	if tls {
		o.APIOptions = append(slices.Clip(o.APIOptions), unsignedPayload)
	}
	return s3.New(o)
}

// checksumChoice says which checksum settings the operator chose.
type checksumChoice struct{ request, response bool }

// checksumsChosen reports the checksum settings given in the storage URL
// (gocloud's request_checksum_calculation and
// response_checksum_validation) or in the SDK's environment variables;
// those are kept as they are. The SDK resolves an unset one to "when
// supported" before the client exists, so the client cannot tell.
func checksumsChosen(q url.Values) checksumChoice {
	set := func(param, env string) bool {
		return q.Get(param) != "" || os.Getenv(env) != ""
	}
	return checksumChoice{
		request:  set("request_checksum_calculation", "AWS_REQUEST_CHECKSUM_CALCULATION"),
		response: set("response_checksum_validation", "AWS_RESPONSE_CHECKSUM_VALIDATION"),
	}
}

// unsignedPayload sends the body of a PutObject or UploadPart as
// UNSIGNED-PAYLOAD instead of hashing it with sha256 for the signature
// (with checksums "when required", the SDK would otherwise hash every
// byte once more). It is used over TLS only, where the connection already
// protects the bytes on the way, and claimcheck's own sha256 protects them
// end to end (s3Client). Operations already unsigned (presigned PUT URLs)
// are left alone.
func unsignedPayload(stack *middleware.Stack) error {
	switch stack.ID() {
	case "PutObject", "UploadPart":
	default:
		return nil
	}
	if _, ok := stack.Finalize.Get((&v4.ComputePayloadSHA256{}).ID()); !ok {
		return nil
	}
	return v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware(stack)
}

// knownPayloadHash signs a request's body with sum, its sha256 that the
// caller computed already, where the SDK would hash the body itself:
// over plain HTTP. Over TLS the body goes unsigned (unsignedPayload, or
// the SDK's own choice for S3), so the sum is not used there. The SDK's
// hashing step skips its pass when the hash is set already.
func knownPayloadHash(sum string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		id := (&v4.ComputePayloadSHA256{}).ID()
		if _, ok := stack.Finalize.Get(id); !ok {
			return nil // an operation whose body is not signed
		}
		return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("KnownPayloadSHA256",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok && !req.IsHTTPS() {
					ctx = v4.SetPayloadHash(ctx, sum)
				}
				return next.HandleFinalize(ctx, in)
			}), id, middleware.Before)
	}
}

// s3SSE is the server-side encryption the URL asks for (gocloud's
// ssetype and kmskeyid parameters), applied to the PutObject requests
// claimcheck sends itself.
type s3SSE struct {
	typ      types.ServerSideEncryption
	kmsKeyID string
}

// sseOf reads the encryption parameters; gocloud has already refused
// invalid values when it opened the URL.
func sseOf(q url.Values) s3SSE {
	var e s3SSE
	if v := q.Get("ssetype"); v != "" {
		for _, t := range types.ServerSideEncryption("").Values() {
			if strings.EqualFold(string(t), v) {
				e.typ = t
			}
		}
	}
	e.kmsKeyID = q.Get("kmskeyid")
	return e
}

func (e s3SSE) apply(in *s3.PutObjectInput) {
	in.ServerSideEncryption = e.typ
	if e.kmsKeyID != "" {
		in.SSEKMSKeyId = aws.String(e.kmsKeyID)
	}
}
