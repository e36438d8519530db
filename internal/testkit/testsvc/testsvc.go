// Package testsvc gives tests a private corner of the real PostgreSQL and
// S3 (MinIO) services that scripts/test.sh starts: a fresh
// schema of TEST_DATABASE_URL and a fresh bucket next to TEST_S3_URL's,
// both removed when the test ends. Without the variables the tests skip,
// saying why, so plain `go test ./...` passes.
package testsvc

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/claimcheck/claimcheck/blob"
)

// Require skips the test unless both services are configured: for a
// test that needs them together, before it opens anything.
func Require(tb testing.TB) {
	tb.Helper()
	getenv(tb, "TEST_DATABASE_URL", "PostgreSQL")
	getenv(tb, "TEST_S3_URL", "MinIO")
}

// S3URL returns TEST_S3_URL itself, the bucket the scripts made, or
// skips the test: for tests of the S3 store that need the service's own
// bucket rather than a fresh one (S3 below).
func S3URL(tb testing.TB) string {
	tb.Helper()
	return getenv(tb, "TEST_S3_URL", "MinIO")
}

// getenv returns the variable that names service, or skips the test.
func getenv(tb testing.TB, name, service string) string {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		tb.Skipf("%s is not set: skipping (scripts/test.sh starts %s and sets it)", name, service)
	}
	return v
}

// Postgres returns a postgres:// DSN whose search_path is a fresh schema,
// and a connection to it for direct checks. It skips the test when
// TEST_DATABASE_URL is not set.
func Postgres(tb testing.TB) (dsn string, db *sql.DB) {
	tb.Helper()
	base := getenv(tb, "TEST_DATABASE_URL", "PostgreSQL")
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatal(err)
	}
	schema := "t_" + strings.ToLower(rand.Text())[:16]
	if _, err := admin.ExecContext(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		_ = admin.Close()
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Logf("drop schema %s: %v", schema, err)
		}
		_ = admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err = sql.Open("pgx", u.String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return u.String(), db
}

// S3 returns an s3:// URL of a fresh bucket on TEST_S3_URL's service and a
// client for direct checks. The bucket and its objects are removed when
// the test ends. It skips the test when TEST_S3_URL is not set.
func S3(tb testing.TB) (storageURL string, client *s3.Client, bucket string) {
	tb.Helper()
	base := getenv(tb, "TEST_S3_URL", "MinIO")
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	client = Client(tb, u)
	bucket = "cc-" + strings.ToLower(rand.Text())[:16]
	ctx := context.Background()
	// A loaded MinIO now and then refuses a request it read only part of
	// (400 IncompleteBody); the bucket is new, so asking again is safe,
	// and a bucket the refused try did create is ours already.
	for try := 1; ; try++ {
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		var owned *types.BucketAlreadyOwnedByYou
		if err == nil || errors.As(err, &owned) {
			break
		}
		if try == 5 {
			tb.Fatalf("create bucket %s: %v", bucket, err)
		}
		time.Sleep(time.Duration(try) * 100 * time.Millisecond)
	}
	tb.Cleanup(func() {
		p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				break
			}
			for _, o := range page.Contents {
				_, _ = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			}
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			tb.Logf("delete bucket %s: %v", bucket, err)
		}
	})
	u.Host = bucket
	return u.String(), client, bucket
}

// Client is an S3 client for the service an s3:// URL names (endpoint,
// region and path style from its query; credentials from the AWS
// environment).
func Client(tb testing.TB, u *url.URL) *s3.Client {
	tb.Helper()
	q := u.Query()
	region := q.Get("region")
	if region == "" {
		region = "us-east-1"
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(region))
	if err != nil {
		tb.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if ep := q.Get("endpoint"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
		o.UsePathStyle = q.Get("use_path_style") == "true"
	})
}

// CountObjects returns how many objects the bucket holds, not counting
// the stores' owner markers (blob.IsOwnerMarker).
func CountObjects(tb testing.TB, client *s3.Client, bucket string) int {
	tb.Helper()
	n := 0
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatalf("list %s: %v", bucket, err)
		}
		for _, o := range page.Contents {
			if !blob.IsOwnerMarker(aws.ToString(o.Key)) {
				n++
			}
		}
	}
	return n
}

// S3DataDir returns the directory where the MinIO of TEST_S3_URL keeps
// its buckets (TEST_S3_DATA_DIR, printed by scripts/minio.sh), for tests
// that damage an object the way a disk would, or skips the test: a
// MinIO started elsewhere may not be reachable on this file system.
func S3DataDir(tb testing.TB) string {
	tb.Helper()
	getenv(tb, "TEST_S3_URL", "MinIO")
	return getenv(tb, "TEST_S3_DATA_DIR", "MinIO with its data directory")
}
