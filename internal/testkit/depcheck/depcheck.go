// Package depcheck keeps the public contract light. A service that only
// talks to a claimcheck server (through package client, or one of the
// integration modules) must not link the embedded engine or what it is
// built on: SQL drivers, cloud SDKs, crypto libraries. Such a dependency
// comes back easily (one import of the engine for a helper), and nothing
// but a test notices, so each light package has a test that calls Check.
package depcheck

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Forbidden are import-path prefixes a light package must not depend on:
// the engine and its storage layers, and the modules they bring.
var Forbidden = []string{
	"github.com/claimcheck/claimcheck/engine",
	"github.com/claimcheck/claimcheck/meta",
	"github.com/claimcheck/claimcheck/blob",
	"github.com/claimcheck/claimcheck/sweep",
	"github.com/claimcheck/claimcheck/compress",
	"modernc.org/sqlite",
	"github.com/jackc/pgx",
	"github.com/aws/",
	"gocloud.dev",
	"cloud.google.com/",
	"github.com/Azure/",
	"github.com/tink-crypto",
}

// Check fails t when any of pkgs (as `go list` takes them, relative to the
// test's directory) depends on a Forbidden package, naming the package
// and the chain that brings it in. It returns the number of packages the
// first of pkgs depends on, for a test to log.
func Check(t testing.TB, pkgs ...string) int {
	t.Helper()
	return CheckAllowing(t, nil, pkgs...)
}

// CheckAllowing is Check with the Forbidden prefixes in allowed
// permitted: an integration built on a cloud SDK (integrations/sqs links
// the AWS SDK) still must not link the engine.
func CheckAllowing(t testing.TB, allowed []string, pkgs ...string) int {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: cannot list dependencies")
	}
	total := 0
	for _, pkg := range pkgs {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		importedBy := map[string]string{} // package → a package that imports it
		var all []string
		for line := range strings.Lines(string(out)) {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			all = append(all, f[0])
			for _, imp := range f[1:] {
				if _, ok := importedBy[imp]; !ok {
					importedBy[imp] = f[0]
				}
			}
		}
		if total == 0 {
			total = len(all)
		}
		reported := map[string]bool{} // one error per forbidden prefix
		for _, p := range all {
			for _, bad := range Forbidden {
				if slices.Contains(allowed, bad) {
					continue
				}
				if strings.HasPrefix(p, bad) && !reported[bad] {
					reported[bad] = true
					t.Errorf("%s depends on %s (forbidden prefix %s), through %s", pkg, p, bad, chain(importedBy, p))
				}
			}
		}
	}
	return total
}

// chain names how p is reached: the importer of p, its importer, and so on.
func chain(importedBy map[string]string, p string) string {
	path := []string{p}
	for seen := map[string]bool{p: true}; ; {
		next, ok := importedBy[p]
		if !ok || seen[next] {
			break
		}
		seen[next] = true
		path = append(path, next)
		p = next
	}
	return strings.Join(path, " <- ")
}
