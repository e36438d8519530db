package testsvc

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// GCSURL returns TEST_GCS_URL, the gs:// URL of the bucket
// scripts/fakegcs.sh made on fake-gcs-server, or skips the test.
func GCSURL(tb testing.TB) string {
	tb.Helper()
	return getenv(tb, "TEST_GCS_URL", "fake-gcs-server (scripts/fakegcs.sh)")
}

// AzureURL returns TEST_AZURE_URL, the azblob:// URL of the container
// scripts/azurite.sh made on Azurite (whose credentials it exports in
// AZURE_STORAGE_CONNECTION_STRING), or skips the test.
func AzureURL(tb testing.TB) string {
	tb.Helper()
	return getenv(tb, "TEST_AZURE_URL", "Azurite (scripts/azurite.sh)")
}

// GCS returns a gs:// URL of a fresh bucket on TEST_GCS_URL's
// fake-gcs-server, with TEST_GCS_URL's parameters, or skips the test.
// The emulator's buckets go with it when scripts/fakegcs.sh stops it.
func GCS(tb testing.TB) string {
	tb.Helper()
	u, err := url.Parse(GCSURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	endpoint := u.Query().Get("endpoint")
	if endpoint == "" {
		tb.Fatal("TEST_GCS_URL has no endpoint parameter")
	}
	bucket := "cc-" + strings.ToLower(rand.Text())[:16]
	body := fmt.Sprintf(`{"name":%q}`, bucket)
	resp, err := http.Post(endpoint+"/storage/v1/b?project=claimcheck-test", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		tb.Fatalf("create bucket %s: %v", bucket, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		tb.Fatalf("create bucket %s: %s", bucket, resp.Status)
	}
	u.Host = bucket
	return u.String()
}

// Azure returns an azblob:// URL of a fresh container on Azurite (the
// account of AZURE_STORAGE_CONNECTION_STRING), or skips the test. The
// container and its blobs are removed when the test ends.
func Azure(tb testing.TB) string {
	tb.Helper()
	u, err := url.Parse(AzureURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := azblob.NewClientFromConnectionString(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
	if err != nil {
		tb.Fatalf("AZURE_STORAGE_CONNECTION_STRING: %v", err)
	}
	name := "cc-" + strings.ToLower(rand.Text())[:16]
	if _, err := c.CreateContainer(context.Background(), name, nil); err != nil {
		tb.Fatalf("create container %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if _, err := c.DeleteContainer(context.Background(), name, nil); err != nil {
			tb.Logf("delete container %s: %v", name, err)
		}
	})
	u.Host = name
	return u.String()
}
