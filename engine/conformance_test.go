package engine_test

import (
	"testing"

	"github.com/claimcheck/claimcheck/claimstest"
	"github.com/claimcheck/claimcheck/internal/testkit/claimsharness"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

// The embedded store under the contract's conformance suite: a fresh
// store per subtest, the store itself as the claimcheck.Claims.

func TestConformance(t *testing.T) {
	claimstest.Run(t, func(t *testing.T, opts claimstest.Options) claimstest.Harness {
		return claimsharness.Open(t, claimsharness.Files, opts).Harness()
	})
}

// TestConformanceServices runs the suite on PostgreSQL and S3 (MinIO)
// when the test services are up: the production backends, where the
// upload URLs are presigned by S3 instead of served by the store.
func TestConformanceServices(t *testing.T) {
	claimsharness.SkipWithoutServices(t)
	claimstest.Run(t, func(t *testing.T, opts claimstest.Options) claimstest.Harness {
		return claimsharness.Open(t, claimsharness.Services, opts).Harness()
	})
}

// TestConformanceGCS and TestConformanceAzure run the suite on
// PostgreSQL and each cloud's emulator (fake-gcs-server, Azurite): upload
// URLs are V4 signed URLs and SAS URLs there.
func TestConformanceGCS(t *testing.T) {
	testsvc.GCSURL(t)
	claimstest.Run(t, func(t *testing.T, opts claimstest.Options) claimstest.Harness {
		return claimsharness.Open(t, claimsharness.ServicesGCS, opts).Harness()
	})
}

func TestConformanceAzure(t *testing.T) {
	testsvc.AzureURL(t)
	claimstest.Run(t, func(t *testing.T, opts claimstest.Options) claimstest.Harness {
		return claimsharness.Open(t, claimsharness.ServicesAzure, opts).Harness()
	})
}
