package blob_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	_ "github.com/claimcheck/claimcheck/blob/filestore"
	_ "github.com/claimcheck/claimcheck/blob/memstore"
)

func TestCounting(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s, _ := blob.NewCounting(blobtest.Open(t, "mem://"))
		return s
	})
}

// TestMetrics runs the suite through WithMetrics over both local
// backends: the wrapper must change nothing a caller can see.
func TestMetrics(t *testing.T) {
	for _, url := range []string{"mem://", "file://"} {
		t.Run(url, func(t *testing.T) {
			blobtest.Run(t, func(t *testing.T) blob.Store {
				u := url
				if u == "file://" {
					u += t.TempDir()
				}
				return blob.WithMetrics(blobtest.Open(t, u), prometheus.NewRegistry())
			})
		})
	}
}
