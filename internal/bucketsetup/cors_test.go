package bucketsetup_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/memstore"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/bucketsetup"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
)

// corsBucket is an in-memory bucket with CORS rules, or, with
// unsupported set, one that cannot write them (MinIO).
type corsBucket struct {
	blob.Store
	rules       []blob.CORSRule
	puts        int
	unsupported bool
	data        string // the data directory of the store that owns the bucket
}

func (b *corsBucket) CORSRequestHeaders() []string {
	return []string{"Content-Type", "X-Amz-Checksum-Sha256"}
}

func (b *corsBucket) CORSRules(context.Context) ([]blob.CORSRule, error) {
	return slices.Clone(b.rules), nil
}

func (b *corsBucket) PutCORSRules(_ context.Context, rules []blob.CORSRule) error {
	if b.unsupported {
		return blob.ErrCORSUnsupported
	}
	b.rules = slices.Clone(rules)
	b.puts++
	return nil
}

func openCORS(t *testing.T, b *corsBucket, mode string, origins ...string) string {
	t.Helper()
	var log bytes.Buffer
	if b.data == "" {
		b.data = t.TempDir() // one store on the bucket, opened again and again
	}
	s := enginetest.Open(t, engine.Config{Data: b.data, BlobStore: b, BucketCORS: mode, BrowserOrigins: origins,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	s.Close()
	return log.String()
}

func TestBucketCORS(t *testing.T) {
	mem := memstore.New()
	t.Cleanup(func() { mem.Close() })
	foreign := blob.CORSRule{ID: "web-team", AllowedOrigins: []string{"https://www.example.com"}, AllowedMethods: []string{"GET"}}
	origins := []string{"https://app.example.com", "https://*.example.org"}

	// Check (the default): says which origins are missing, writes nothing.
	b := &corsBucket{Store: mem, rules: []blob.CORSRule{foreign}}
	log := openCORS(t, b, "", origins...)
	if b.puts != 0 || !strings.Contains(log, "bucket CORS") || !strings.Contains(log, "https://app.example.com") || !strings.Contains(log, "bucket_cors: manage") {
		t.Fatalf("check mode: %d puts, log:\n%s", b.puts, log)
	}

	// Manage: writes our rule, keeps the foreign one; then nothing to do.
	log = openCORS(t, b, engine.BucketCORSManage, origins...)
	if b.puts != 1 || len(b.rules) != 2 || !slices.ContainsFunc(b.rules, func(r blob.CORSRule) bool { return r.ID == "web-team" }) {
		t.Fatalf("manage mode: %d puts, rules %+v, log:\n%s", b.puts, b.rules, log)
	}
	if uncovered := bucketsetup.UncoveredOrigins(b.rules, origins, b.CORSRequestHeaders()); len(uncovered) != 0 {
		t.Fatalf("after manage, %v still uncovered", uncovered)
	}
	if log = openCORS(t, b, engine.BucketCORSManage, origins...); b.puts != 1 || strings.Contains(log, "bucket CORS") {
		t.Fatalf("manage mode on covered origins: %d puts, log:\n%s", b.puts, log)
	}
	// A new origin: our rule is rewritten, not added to.
	openCORS(t, b, engine.BucketCORSManage, append(origins, "http://127.0.0.1:3000")...)
	if b.puts != 2 || len(b.rules) != 2 {
		t.Fatalf("manage with a new origin: %d puts, rules %+v", b.puts, b.rules)
	}

	// Off, or no origins: not even read.
	b2 := &corsBucket{Store: mem, data: b.data}
	if log := openCORS(t, b2, engine.BucketCORSOff, origins...); strings.Contains(log, "bucket CORS") {
		t.Fatalf("off: %s", log)
	}
	if log := openCORS(t, b2, engine.BucketCORSManage); strings.Contains(log, "bucket CORS") || b2.puts != 0 {
		t.Fatalf("no origins: %s", log)
	}

	// A service that cannot write rules: said plainly, naming MinIO's own setting; the store opens.
	b3 := &corsBucket{Store: mem, unsupported: true, data: b.data}
	if log := openCORS(t, b3, engine.BucketCORSManage, origins...); !strings.Contains(log, "MINIO_API_CORS_ALLOW_ORIGIN") {
		t.Fatalf("unsupported: %s", log)
	}

	if err := (engine.Config{BucketCORS: "yes"}).WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "bucket_cors") {
		t.Fatalf("bad mode: %v", err)
	}
}
