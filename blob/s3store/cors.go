package s3store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/claimcheck/claimcheck/blob"
)

var _ blob.CORSConfigurer = (*Bucket)(nil)

// corsUnsupported tells a service without bucket CORS configuration
// (MinIO: NotImplemented) from a failure.
func corsUnsupported(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "NotImplemented"
}

// CORSRequestHeaders implements blob.CORSConfigurer: the headers
// PresignPut signs that a browser sends.
func (b *Bucket) CORSRequestHeaders() []string {
	return []string{"Content-Type", "X-Amz-Checksum-Sha256"}
}

// CORSRules implements blob.CORSConfigurer.
func (b *Bucket) CORSRules(ctx context.Context) ([]blob.CORSRule, error) {
	out, err := b.client.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String(b.name)})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "NoSuchCORSConfiguration" {
		return []blob.CORSRule{}, nil
	}
	if corsUnsupported(err) {
		return nil, fmt.Errorf("blob: get CORS configuration of bucket %s: %w (%v)", b.name, blob.ErrCORSUnsupported, err)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: get CORS configuration of bucket %s: %w", b.name, err)
	}
	rules := make([]blob.CORSRule, 0, len(out.CORSRules))
	for _, r := range out.CORSRules {
		rules = append(rules, blob.CORSRule{
			ID:             aws.ToString(r.ID),
			AllowedOrigins: r.AllowedOrigins,
			AllowedMethods: r.AllowedMethods,
			AllowedHeaders: r.AllowedHeaders,
			ExposeHeaders:  r.ExposeHeaders,
			MaxAgeSeconds:  int(aws.ToInt32(r.MaxAgeSeconds)),
		})
	}
	return rules, nil
}

// PutCORSRules implements blob.CORSConfigurer. No rules deletes the bucket's
// CORS configuration (S3 refuses an empty one).
func (b *Bucket) PutCORSRules(ctx context.Context, rules []blob.CORSRule) error {
	if len(rules) == 0 {
		_, err := b.client.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: aws.String(b.name)})
		if corsUnsupported(err) {
			return fmt.Errorf("blob: delete CORS configuration of bucket %s: %w (%v)", b.name, blob.ErrCORSUnsupported, err)
		}
		if err != nil {
			return fmt.Errorf("blob: delete CORS configuration of bucket %s: %w", b.name, err)
		}
		return nil
	}
	out := make([]types.CORSRule, 0, len(rules))
	for _, r := range rules {
		cr := types.CORSRule{
			AllowedOrigins: r.AllowedOrigins,
			AllowedMethods: r.AllowedMethods,
			AllowedHeaders: r.AllowedHeaders,
			ExposeHeaders:  r.ExposeHeaders,
		}
		if r.ID != "" {
			cr.ID = aws.String(r.ID)
		}
		if r.MaxAgeSeconds > 0 {
			cr.MaxAgeSeconds = aws.Int32(int32(r.MaxAgeSeconds))
		}
		out = append(out, cr)
	}
	_, err := b.client.PutBucketCors(ctx, &s3.PutBucketCorsInput{
		Bucket:            aws.String(b.name),
		CORSConfiguration: &types.CORSConfiguration{CORSRules: out},
	})
	if corsUnsupported(err) {
		return fmt.Errorf("blob: put CORS configuration of bucket %s: %w (%v)", b.name, blob.ErrCORSUnsupported, err)
	}
	if err != nil {
		return fmt.Errorf("blob: put CORS configuration of bucket %s (%d rules): %w", b.name, len(out), err)
	}
	return nil
}
