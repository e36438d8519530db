package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// TestS3CancelledMultipart checks that a write cancelled after it turned
// into a multipart upload leaves no incomplete upload behind.
func TestS3CancelledMultipart(t *testing.T) {
	u := testsvc.S3URL(t)
	b := openTestS3(t, u)
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

// TestS3KnownPayloadSum checks on a real S3 server that a single-request
// write is signed with the sum its caller gives (blob.PayloadHasher): the
// right one stores the object, a wrong one is refused and stores nothing.
func TestS3KnownPayloadSum(t *testing.T) {
	u := testsvc.S3URL(t)
	if strings.HasPrefix(strings.ToLower(u), "https") {
		t.Skip("over TLS bodies go unsigned")
	}
	s := openTestS3(t, u)
	body := make([]byte, 100<<10)
	rand.Read(body)
	right := sha256.Sum256(body)
	wrong := sha256.Sum256(body[1:])
	for _, tc := range []struct {
		name   string
		sum    []byte
		stored bool
	}{{"right", right[:], true}, {"wrong", wrong[:], false}} {
		t.Run(tc.name, func(t *testing.T) {
			// Runs share the bucket: a key of this run's own.
			key := fmt.Sprintf("known-sum/%s-%x", t.Name(), right[:8])
			w, err := s.NewWriter(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
			w.(blob.PayloadHasher).SetPayloadSHA256(tc.sum)
			if err := w.Close(); (err == nil) != tc.stored {
				t.Fatalf("Close = %v, want stored %v", err, tc.stored)
			}
			_, err = s.Attributes(t.Context(), key)
			if tc.stored && err != nil {
				t.Errorf("Attributes after a write with the right sum: %v", err)
			}
			if !tc.stored && !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Attributes after a write with a wrong sum = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestS3KnownPayloadStream checks on a real S3 server that a write
// announced with its length and sha256 (blob.KnownPayloadWriter) is streamed
// and still all or nothing: stored with the bytes announced and only at
// Close, and nothing stored for a wrong sum, too few or too many bytes,
// or a context cancelled before Close, even after every byte was written.
func TestS3KnownPayloadStream(t *testing.T) {
	u := testsvc.S3URL(t)
	s := openTestS3(t, u)
	body := make([]byte, 1<<20+12345)
	rand.Read(body)
	right := sha256.Sum256(body)
	wrong := sha256.Sum256(body[1:])
	tls := strings.HasPrefix(strings.ToLower(u), "https")
	for _, tc := range []struct {
		name   string
		sum    []byte
		write  []byte
		cancel bool
		stored bool
	}{
		{"right", right[:], body, false, true},
		{"wrong sum", wrong[:], body, false, tls}, // over TLS the body goes unsigned
		{"short", right[:], body[:len(body)-1], false, false},
		{"long", right[:], append(slices.Clip(body), 0), false, false},
		{"cancelled after the last byte", right[:], body, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("known-stream/%s-%x", strings.ReplaceAll(tc.name, " ", "-"), right[:8])
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			w, err := s.NewWriter(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if !w.(blob.KnownPayloadWriter).SetKnownPayload(int64(len(body)), tc.sum) {
				t.Fatal("a writer of 1 MiB declined to stream")
			}
			var werr error
			for rest := tc.write; len(rest) > 0 && werr == nil; {
				n := min(len(rest), 100<<10)
				_, werr = w.Write(rest[:n])
				rest = rest[n:]
			}
			if werr != nil && tc.stored {
				t.Fatalf("Write: %v", werr)
			}
			if _, err := s.Attributes(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("Attributes before Close = %v, want ErrNotFound", err)
			}
			if tc.cancel {
				cancel()
			}
			if err := w.Close(); (err == nil) != tc.stored {
				t.Fatalf("Close = %v, want stored %v", err, tc.stored)
			}
			if !tc.stored {
				if _, err := s.Attributes(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
					t.Fatalf("Attributes after a refused write = %v, want ErrNotFound", err)
				}
				return
			}
			r, err := s.NewReader(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("read back %d bytes of %d: %v", len(got), len(body), err)
			}
		})
	}
}

// TestS3Lifecycle round-trips lifecycle rules through a bucket of its own
// (rules are per bucket, and other tests share TEST_S3_URL's).
func TestS3Lifecycle(t *testing.T) {
	u := testsvc.S3URL(t)
	b := newTestBucket(t, u)
	ctx := t.Context()
	if rules, err := b.LifecycleRules(ctx); err != nil || len(rules) != 0 {
		t.Fatalf("LifecycleRules of a new bucket = %v, %v; want none", rules, err)
	}
	want := []blob.LifecycleRule{
		{ID: "claimcheck:ns:a", Prefix: "a/", ExpireDays: 3},
		// {ID: "claimcheck:abort-multipart", Prefix: "", AbortMultipartDays: 1},
	}
	if err := b.PutLifecycleRules(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := b.LifecycleRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(x, y blob.LifecycleRule) int { return strings.Compare(y.ID, x.ID) })
	if !slices.Equal(got, want) {
		t.Errorf("LifecycleRules = %+v, want %+v", got, want)
	}
	if err := b.PutLifecycleRules(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if rules, err := b.LifecycleRules(ctx); err != nil || len(rules) != 0 {
		t.Errorf("LifecycleRules after clearing = %v, %v; want none", rules, err)
	}
}

// newTestBucket creates a fresh bucket next to the one u names and opens
// it; the bucket is removed when the test ends.
func newTestBucket(t *testing.T, u string) *Bucket {
	t.Helper()
	base := openTestS3(t, u)
	name := "claimcheck-" + strings.ToLower(rand.Text())[:12]
	if _, err := base.client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pu.Host = name
	s2, err := blob.Open(t.Context(), pu.String())
	if err != nil {
		t.Fatal(err)
	}
	b := s2.(*Bucket)
	t.Cleanup(func() {
		ctx := context.Background()
		for token := ""; ; {
			objs, next, err := b.List(ctx, "", token, 1000)
			if err != nil {
				break
			}
			for _, o := range objs {
				_ = b.Delete(ctx, o.Key)
			}
			if next == "" {
				break
			}
			token = next
		}
		if _, err := b.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Logf("delete bucket %s: %v", name, err)
		}
		b.Close()
	})
	return b
}

// openTestS3 opens the S3 store at u for the test, closed when it ends.
func openTestS3(t *testing.T, u string) *Bucket {
	t.Helper()
	s, err := blob.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*Bucket)
}

// TestS3SmallKnownPayloadBuffered checks on a real S3 server that an
// announced object of up to claimcheck.HashCopyChunk bytes, which arrives whole
// before its first byte is written, is not streamed: SetKnownPayload
// declines it and the buffered PutObject stores it, signed with the sum
// as the engine then sets it (ADR 0180); one byte more streams.
func TestS3SmallKnownPayloadBuffered(t *testing.T) {
	s := openTestS3(t, testsvc.S3URL(t))
	for _, tc := range []struct {
		size    int
		streams bool
	}{{1, false}, {64 << 10, false}, {streamMin - 1, false}, {streamMin, true}} {
		body := make([]byte, tc.size)
		rand.Read(body)
		sum := sha256.Sum256(body)
		key := fmt.Sprintf("known-small/%d-%x", tc.size, sum[:8])
		w, err := s.NewWriter(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.(blob.KnownPayloadWriter).SetKnownPayload(int64(tc.size), sum[:]); got != tc.streams {
			t.Errorf("SetKnownPayload(%d): %v, want %v", tc.size, got, tc.streams)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
		if !tc.streams {
			w.(blob.PayloadHasher).SetPayloadSHA256(sum[:])
		}
		if err := w.Close(); err != nil {
			t.Fatalf("%d bytes: Close: %v", tc.size, err)
		}
		r, err := s.NewReader(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("%d bytes: read back %d bytes, %v", tc.size, len(got), err)
		}
	}
}
