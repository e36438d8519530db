package sqs

import (
	"testing"

	"github.com/claimcheck/claimcheck/internal/testkit/depcheck"
)

// TestContractDependencies: the integration links the claimcheck
// contract and the AWS SDK, never the embedded engine or its storage
// modules (its tests may open an engine; its package may not).
func TestContractDependencies(t *testing.T) {
	t.Logf("the package depends on %d packages", depcheck.CheckAllowing(t, []string{"github.com/aws/"}, "."))
}
