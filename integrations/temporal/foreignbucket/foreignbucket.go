// Package foreignbucket opens the bucket of another Temporal storage
// driver (aws.s3driver, gcp.gcsdriver) through claimcheck's blob backends,
// as a temporal.ForeignBucket: s3:// (S3 and MinIO), gs:// and azblob://
// URLs, written as claimcheck's storage URLs are (docs/CONFIGURATION.md).
// It is a package of its own so that package temporal links no cloud SDK:
// only a worker that still reads such references, and the adopt command,
// import it.
package foreignbucket

import (
	"context"
	"io"

	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/allstores" // the URL schemes
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
)

// Bucket is a blob.Store read as a foreign driver's bucket.
type Bucket struct{ s blob.Store }

var _ cctemporal.ForeignBucket = Bucket{}

// Open opens the bucket a storage URL names.
func Open(ctx context.Context, storageURL string) (Bucket, error) {
	s, err := blob.Open(ctx, storageURL)
	if err != nil {
		return Bucket{}, err
	}
	return Bucket{s: s}, nil
}

// Of reads s as a foreign driver's bucket.
func Of(s blob.Store) Bucket { return Bucket{s: s} }

// Read returns the object's bytes; a missing object's error is
// blob.ErrNotFound, which matches fs.ErrNotExist.
func (b Bucket) Read(ctx context.Context, key string) ([]byte, error) {
	r, err := b.s.NewReader(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}

// List returns a page of keys under prefix.
func (b Bucket) List(ctx context.Context, prefix, token string, pageSize int) ([]string, string, error) {
	objs, next, err := b.s.List(ctx, prefix, token, pageSize)
	if err != nil {
		return nil, "", err
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys, next, nil
}

// Delete removes the object.
func (b Bucket) Delete(ctx context.Context, key string) error { return b.s.Delete(ctx, key) }

// Close releases the store.
func (b Bucket) Close() error { return b.s.Close() }
