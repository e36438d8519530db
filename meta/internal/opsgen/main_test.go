package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedUpToDate fails when meta/instrument_gen.go is not what
// opsgen writes from the Store interface as it is now: a method added,
// removed or changed without `go generate ./meta`.
func TestGeneratedUpToDate(t *testing.T) {
	dir := filepath.Join("..", "..")
	want, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, outName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date: run go generate ./meta", outName)
	}
}
