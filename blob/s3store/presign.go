package s3store

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/claimcheck/claimcheck/blob"
)

var _ blob.Presigner = (*Bucket)(nil)

// maxPresignTTL is the longest lifetime SigV4 allows a presigned URL.
const maxPresignTTL = 7 * 24 * time.Hour

// PresignPut implements blob.Presigner. The URL is signed over the
// Content-Length and the x-amz-checksum-sha256 header, so the service
// refuses a body of another length (the signature no longer matches) or
// other bytes (the checksum does not), and the object never appears.
// sha256Hex is the object's digest as 64 lowercase hex digits.
func (b *Bucket) PresignPut(ctx context.Context, key string, size int64, sha256Hex string, ttl time.Duration) (blob.PresignedPut, error) {
	if err := blob.CheckPresign(key, size, sha256Hex, ttl, maxPresignTTL); err != nil {
		return blob.PresignedPut{}, err
	}
	sum, _ := hex.DecodeString(sha256Hex)
	if escapedByGocloud(key) {
		return blob.PresignedPut{}, fmt.Errorf("blob: presign %s: key has characters only the portable API can store", key)
	}
	p := s3.NewPresignClient(b.client, s3.WithPresignExpires(ttl))
	req, err := p.PresignPutObject(ctx, &s3.PutObjectInput{
		Bucket:            aws.String(b.name),
		Key:               aws.String(key),
		ContentLength:     aws.Int64(size),
		ContentType:       aws.String("application/octet-stream"),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		ChecksumSHA256:    aws.String(base64.StdEncoding.EncodeToString(sum)),
	})
	if err != nil {
		return blob.PresignedPut{}, fmt.Errorf("blob: presign %s: %w", key, err)
	}
	headers := make(map[string]string, len(req.SignedHeader))
	for k, v := range req.SignedHeader {
		// Host comes from the URL; Go's client sets Content-Length from
		// the body, and the caller must send exactly size bytes.
		if k == "Host" || len(v) == 0 {
			continue
		}
		headers[http.CanonicalHeaderKey(k)] = v[0]
	}
	return blob.PresignedPut{URL: req.URL, Method: req.Method, Headers: headers, Expires: time.Now().Add(ttl)}, nil
}
