package blob

import (
	"errors"
	"slices"
	"testing"

	"github.com/claimcheck/claimcheck/internal/testsvc"
)

func TestCORSRuleAllows(t *testing.T) {
	r := CORSRule{
		AllowedOrigins: []string{"https://app.example.com", "https://*.example.org"},
		AllowedMethods: []string{"PUT"},
		AllowedHeaders: []string{"Content-Type", "x-amz-*"},
	}
	for _, tc := range []struct {
		origin, method string
		headers        []string
		want           bool
	}{
		{"https://app.example.com", "PUT", []string{"content-type", "X-Amz-Checksum-Sha256"}, true},
		{"https://a.example.org", "put", nil, true},
		{"https://*.example.org", "PUT", nil, true}, // our own wildcard, the same entry
		{"https://app.example.com", "POST", nil, false},
		{"https://evil.example.com", "PUT", nil, false},
		{"https://app.example.com", "PUT", []string{"Authorization"}, false},
	} {
		if got := r.Allows(tc.origin, tc.method, tc.headers); got != tc.want {
			t.Errorf("Allows(%s, %s, %v) = %v, want %v", tc.origin, tc.method, tc.headers, got, tc.want)
		}
	}
	if !(CORSRule{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"PUT"}, AllowedHeaders: []string{"*"}}).Allows("https://*.example.org", "PUT", []string{"x"}) {
		t.Error(`"*" should allow everything`)
	}
}

// TestS3CORS round-trips CORS rules through a bucket of its own, or, on
// a service that cannot write them (MinIO), checks that it says so with
// ErrCORSUnsupported.
func TestS3CORS(t *testing.T) {
	u := testsvc.S3URL(t)
	b := newTestBucket(t, u)
	ctx := t.Context()
	want := []CORSRule{{ID: "claimcheck:direct-uploads", AllowedOrigins: []string{"https://app.example.com"},
		AllowedMethods: []string{"PUT"}, AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: 3600}}
	rules, err := b.CORSRules(ctx)
	if err != nil || len(rules) != 0 {
		t.Fatalf("CORSRules of a new bucket = %v, %v; want none", rules, err)
	}
	// MinIO reads "no configuration" but cannot write one: it answers
	// CORS from a server-wide setting. That must come back as
	// ErrCORSUnsupported, for the engine to say so.
	if err := b.PutCORSRules(ctx, want); errors.Is(err, ErrCORSUnsupported) {
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
