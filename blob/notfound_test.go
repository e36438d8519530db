package blob_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
)

// A missing object is blob.ErrNotFound and fs.ErrNotExist alike, wrapped
// or not: readers outside this package tell it from an outage by the
// standard library's sentinel.
func TestErrNotFoundIsNotExist(t *testing.T) {
	wrapped := fmt.Errorf("read key a/b: %w", blob.ErrNotFound)
	if !errors.Is(wrapped, blob.ErrNotFound) || !errors.Is(wrapped, fs.ErrNotExist) {
		t.Fatalf("%v: want both blob.ErrNotFound and fs.ErrNotExist", wrapped)
	}
	if errors.Is(errors.New("blob: object not found"), blob.ErrNotFound) || errors.Is(fs.ErrNotExist, blob.ErrNotFound) {
		t.Fatal("another error matched blob.ErrNotFound")
	}
}
