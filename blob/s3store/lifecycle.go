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

var _ blob.Lifecycler = (*Bucket)(nil)

// LifecycleRules implements blob.Lifecycler. Disabled rules are left out: they
// delete nothing.
func (b *Bucket) LifecycleRules(ctx context.Context) ([]blob.LifecycleRule, error) {
	out, err := b.client.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{
		Bucket: aws.String(b.name),
	})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "NoSuchLifecycleConfiguration" {
		return []blob.LifecycleRule{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("blob: get lifecycle configuration of bucket %s: %w", b.name, err)
	}
	rules := make([]blob.LifecycleRule, 0, len(out.Rules))
	for _, r := range out.Rules {
		if r.Status != types.ExpirationStatusEnabled {
			continue
		}
		// Rules written by older tools carry the prefix in the deprecated
		// top-level field; they still expire objects, so they count.
		lr := blob.LifecycleRule{ID: aws.ToString(r.ID), Prefix: aws.ToString(r.Prefix)} //nolint:staticcheck // SA1019: reading rules written by older tools (and MinIO) is the point
		if f := r.Filter; f != nil {
			switch {
			case f.And != nil:
				lr.Prefix = aws.ToString(f.And.Prefix)
				lr.Filtered = len(f.And.Tags) > 0 || f.And.ObjectSizeGreaterThan != nil || f.And.ObjectSizeLessThan != nil
			case f.Prefix != nil:
				lr.Prefix = aws.ToString(f.Prefix)
			default:
				lr.Filtered = f.Tag != nil || f.ObjectSizeGreaterThan != nil || f.ObjectSizeLessThan != nil
			}
		}
		if e := r.Expiration; e != nil {
			lr.ExpireDays = int(aws.ToInt32(e.Days))
			if e.Date != nil && lr.ExpireDays == 0 {
				// A fixed date: treat as "any time now", the strictest
				// reading for a safety check.
				lr.ExpireDays = 1
			}
		}
		if a := r.AbortIncompleteMultipartUpload; a != nil {
			lr.AbortMultipartDays = int(aws.ToInt32(a.DaysAfterInitiation))
		}
		rules = append(rules, lr)
	}
	return rules, nil
}

// PutLifecycleRules implements blob.Lifecycler. No rules deletes the bucket's
// lifecycle configuration (S3 refuses an empty one).
func (b *Bucket) PutLifecycleRules(ctx context.Context, rules []blob.LifecycleRule) error {
	if len(rules) == 0 {
		_, err := b.client.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String(b.name)})
		if err != nil {
			return fmt.Errorf("blob: delete lifecycle configuration of bucket %s: %w", b.name, err)
		}
		return nil
	}
	out := make([]types.LifecycleRule, 0, len(rules))
	for _, r := range rules {
		if r.Filtered {
			return fmt.Errorf("blob: put lifecycle rule %q: filters other than a prefix cannot be written back; remove the rule or manage the bucket's lifecycle by hand", r.ID)
		}
		lr := types.LifecycleRule{
			ID:     aws.String(r.ID),
			Status: types.ExpirationStatusEnabled,
			Filter: &types.LifecycleRuleFilter{Prefix: aws.String(r.Prefix)},
		}
		if r.ExpireDays > 0 {
			lr.Expiration = &types.LifecycleExpiration{Days: aws.Int32(int32(r.ExpireDays))}
		}
		if r.AbortMultipartDays > 0 {
			lr.AbortIncompleteMultipartUpload = &types.AbortIncompleteMultipartUpload{
				DaysAfterInitiation: aws.Int32(int32(r.AbortMultipartDays)),
			}
		}
		out = append(out, lr)
	}
	_, err := b.client.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{
		Bucket:                 aws.String(b.name),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: out},
	})
	if err != nil {
		return fmt.Errorf("blob: put lifecycle configuration of bucket %s (%d rules): %w", b.name, len(out), err)
	}
	return nil
}
