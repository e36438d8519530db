// Package release reads PREVIOUS_RELEASE, the file at the top of the
// repository that names the release before this one: its commit, built
// by the rolling upgrade test, and its schema version, which the
// migrations since must keep working (ADR 0291).
package release

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Previous returns the previous release's commit and schema version,
// from the PREVIOUS_RELEASE file of the first directory at or above the
// test's working directory that has one.
func Previous(tb testing.TB) (commit string, schema int64) {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "PREVIOUS_RELEASE"))
		if err == nil {
			defer func() { _ = f.Close() }()
			return parse(tb, f)
		}
		up := filepath.Dir(dir)
		if up == dir {
			tb.Fatal("no PREVIOUS_RELEASE at or above the working directory")
		}
		dir = up
	}
}

// parse reads the "commit" and "schema" lines.
func parse(tb testing.TB, f *os.File) (commit string, schema int64) {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch key {
		case "commit":
			commit = value
		case "schema":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				tb.Fatalf("PREVIOUS_RELEASE: schema %q: %v", value, err)
			}
			schema = n
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("PREVIOUS_RELEASE: %v", err)
	}
	if commit == "" || schema == 0 {
		tb.Fatal("PREVIOUS_RELEASE names no commit or no schema")
	}
	return commit, schema
}
