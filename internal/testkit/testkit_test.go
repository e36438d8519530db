package testkit_test

import (
	"os/exec"
	"strings"
	"testing"
)

const kit = "github.com/claimcheck/claimcheck/internal/testkit"

// TestOnlyTestsImportTheKit: no package outside the kit imports it from
// a file that is not a test, so no binary links test helpers (and their
// dependencies: the test services' clients, the OpenTelemetry test
// exporter).
func TestOnlyTestsImportTheKit(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: cannot list imports")
	}
	// .Imports lists the imports of a package's non-test files only.
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/claimcheck/claimcheck/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == kit || strings.HasPrefix(f[0], kit+"/") {
			continue
		}
		for _, imp := range f[1:] {
			if imp == kit || strings.HasPrefix(imp, kit+"/") {
				t.Errorf("%s imports %s outside its tests", f[0], imp)
			}
		}
	}
}
