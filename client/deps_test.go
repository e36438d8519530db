package client_test

import (
	"testing"

	"github.com/claimcheck/claimcheck/internal/testkit/depcheck"
)

// TestContractDependencies keeps the client and the contract free of the
// engine and of storage, SQL, cloud and crypto modules: a remote user
// links only these.
func TestContractDependencies(t *testing.T) {
	n := depcheck.Check(t, ".", "github.com/claimcheck/claimcheck", "github.com/claimcheck/claimcheck/server/api")
	t.Logf("the client depends on %d packages", n)
}
