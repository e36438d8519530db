package testsvc

import "testing"

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
