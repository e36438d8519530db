package securitytest

import (
	"testing"

	"github.com/claimcheck/claimcheck/internal/testkit/servetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }
