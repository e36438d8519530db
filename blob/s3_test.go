package blob

import (
	"context"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestS3CancelledMultipart checks that a write cancelled after it turned
// into a multipart upload leaves no incomplete upload behind.
func TestS3CancelledMultipart(t *testing.T) {
	u := os.Getenv("TEST_S3_URL")
	if u == "" {
		t.Skip("TEST_S3_URL not set")
	}
	s, err := Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.(*S3Bucket)
	key := "multipart-abort/" + t.Name()

	ctx, cancel := context.WithCancel(t.Context())
	w, err := b.NewWriter(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// Past the 16 MiB single-PUT threshold: parts are being uploaded.
	if _, err := w.Write(make([]byte, 18<<20)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Close(); err == nil {
		t.Fatal("Close after cancel = nil, want an error")
	}
	out, err := b.client.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{
		Bucket: aws.String(b.name),
		Prefix: aws.String(key),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, up := range out.Uploads {
		t.Errorf("incomplete upload left: %s %s", aws.ToString(up.Key), aws.ToString(up.UploadId))
	}
}
