// Package s3store is the storage backend of s3:// URLs: S3 and
// S3-compatible services (MinIO, ...). It has every optional ability:
// batch deletes (DeleteObjects), presigned direct-upload URLs, lifecycle
// rules, appends (multipart uploads) and bucket CORS rules. Importing the
// package registers its scheme with blob.Open.
//
// URL form: s3://bucket?endpoint=URL&region=R&use_path_style=true;
// credentials come from the AWS environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, profiles, ...). See gocloud.dev/blob/s3blob for
// the other parameters.
package s3store

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob/s3blob"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// Scheme is the URL scheme of the backend: s3://.
const Scheme = s3blob.Scheme

func init() { blob.Register(Scheme, open) }

// Bucket is the Store for S3 and S3-compatible services: the portable
// Bucket, with its own writes and reads where the SDK does better than
// gocloud's (bucket.go), and every optional ability.
type Bucket struct {
	*gocloudbucket.Bucket
	client *s3.Client
	name   string
	sse    s3SSE // for the PutObject requests of NewWriter
}

var (
	_ blob.Store          = (*Bucket)(nil)
	_ blob.BatchDeleter   = (*Bucket)(nil)
	_ blob.Presigner      = (*Bucket)(nil)
	_ blob.Lifecycler     = (*Bucket)(nil)
	_ blob.Appender       = (*Bucket)(nil)
	_ blob.CORSConfigurer = (*Bucket)(nil)
)

// startAfter makes a listing start after the key token: S3's page
// tokens are opaque, so the token cannot be passed through as one.
func startAfter(token string) func(as func(any) bool) error {
	return func(as func(any) bool) error {
		var v2 *s3.ListObjectsV2Input
		if as(&v2) {
			v2.StartAfter = &token
			return nil
		}
		var v1 *s3.ListObjectsInput
		if as(&v1) {
			v1.Marker = &token
			return nil
		}
		return errors.New("cannot set the start key of an S3 listing")
	}
}
