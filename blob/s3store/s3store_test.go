package s3store

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

func TestS3(t *testing.T) {
	u := testsvc.S3URL(t)
	blobtest.Run(t, func(t *testing.T) blob.Store { return blobtest.Open(t, u) })
}

func TestS3DeleteMany(t *testing.T) {
	s := blobtest.Open(t, testsvc.S3URL(t))
	defer s.Close()
	bd, ok := s.(blob.BatchDeleter)
	if !ok {
		t.Fatalf("%T is not a BatchDeleter", s)
	}
	if bd.MaxBatch() != 1000 {
		t.Errorf("MaxBatch = %d, want 1000", bd.MaxBatch())
	}
	ctx := t.Context()
	prefix := fmt.Sprintf("deletemany/%d/", os.Getpid())
	var keys []string
	for i := range 5 {
		k := fmt.Sprintf("%s%d", prefix, i)
		blobtest.Put(t, s, k, "x")
		keys = append(keys, k)
	}
	failed, err := bd.DeleteMany(ctx, append(keys, prefix+"never-written"))
	if err != nil || len(failed) != 0 {
		t.Fatalf("DeleteMany = %v, %v; want no failures", failed, err)
	}
	if objs, _, err := s.List(ctx, prefix, "", 100); err != nil || len(objs) != 0 {
		t.Errorf("List after DeleteMany = %v, %v; want nothing", objs, err)
	}
	if _, err := bd.DeleteMany(ctx, make([]string, 1001)); err == nil {
		t.Error("DeleteMany of 1001 keys = nil error, want a refusal")
	}
}

// TestS3CORS round-trips CORS rules through a bucket of its own, or, on
// a service that cannot write them (MinIO), checks that it says so with
// ErrCORSUnsupported.
func TestS3CORS(t *testing.T) {
	u := testsvc.S3URL(t)
	b := newTestBucket(t, u)
	ctx := t.Context()
	want := []blob.CORSRule{{ID: "claimcheck:direct-uploads", AllowedOrigins: []string{"https://app.example.com"},
		AllowedMethods: []string{"PUT"}, AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: 3600}}
	rules, err := b.CORSRules(ctx)
	if err != nil || len(rules) != 0 {
		t.Fatalf("CORSRules of a new bucket = %v, %v; want none", rules, err)
	}
	// MinIO reads "no configuration" but cannot write one: it answers
	// CORS from a server-wide setting. That must come back as
	// ErrCORSUnsupported, for the engine to say so.
	if err := b.PutCORSRules(ctx, want); errors.Is(err, blob.ErrCORSUnsupported) {
		t.Logf("the service cannot write bucket CORS rules: %v", err)
		return
	} else if err != nil {
		t.Fatal(err)
	}
	got, err := b.CORSRules(ctx)
	if err != nil || len(got) != 1 || got[0].ID != want[0].ID || !slices.Equal(got[0].AllowedOrigins, want[0].AllowedOrigins) {
		t.Fatalf("CORSRules = %+v, %v; want %+v", got, err, want)
	}
	if err := b.PutCORSRules(ctx, nil); err != nil {
		t.Fatal(err)
	}
}
