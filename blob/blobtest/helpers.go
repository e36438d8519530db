package blobtest

import (
	"testing"

	"github.com/claimcheck/claimcheck/blob"
)

// Open opens the store at url through the scheme registry and fails the
// test if it cannot; the backend's package must be imported.
func Open(t *testing.T, url string) blob.Store {
	t.Helper()
	s, err := blob.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	return s
}

// Put writes data at key in s and fails the test if any step fails.
func Put(t *testing.T, s blob.Store, key, data string) {
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
