package client_test

import (
	"testing"

	"github.com/claimcheck/claimcheck/claimstest"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/claimsharness"
)

// The client under the contract's conformance suite: every call goes
// over loopback HTTP to a real server in front of a fresh embedded store
// (SQLite and files) per subtest, so errors, deadlines and payloads are
// checked as they come back through the wire.
func TestConformance(t *testing.T) {
	claimstest.Run(t, func(t *testing.T, opts claimstest.Options) claimstest.Harness {
		env := claimsharness.Open(t, claimsharness.Files, opts)
		c, err := client.New(env.URL)
		if err != nil {
			t.Fatal(err)
		}
		return env.RemoteHarness(c)
	})
}
