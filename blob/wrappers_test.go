package blob_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	_ "github.com/claimcheck/claimcheck/blob/filestore"
	_ "github.com/claimcheck/claimcheck/blob/memstore"
)

func openURL(t *testing.T, url string) blob.Store {
	t.Helper()
	s, err := blob.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	return s
}

func TestCounting(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s, _ := blob.NewCounting(openURL(t, "mem://"))
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
				return blob.WithMetrics(openURL(t, u), prometheus.NewRegistry())
			})
		})
	}
}

func put(t *testing.T, s blob.Store, key, data string) {
	t.Helper()
	w, err := s.NewWriter(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
