package memstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	_ "github.com/claimcheck/claimcheck/blob/memstore"
)

func TestMem(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return blobtest.Open(t, "mem://")
	})
}

func TestErrors(t *testing.T) {
	s := blobtest.Open(t, "mem://")
	defer s.Close()
	_, err := s.NewReader(t.Context(), "ns/missing")
	if !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("NewReader = %v, want ErrNotFound", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "read") || !strings.Contains(msg, "ns/missing") {
		t.Errorf("error %q does not name the operation and the key", msg)
	}
}
