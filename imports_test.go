package claimcheck_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoProjectPackage keeps the contract at the bottom of the
// import graph: it imports no other package of this module, so every
// package (and every client) can import it without a cycle or a heavy
// dependency. Config decoding (YAML) lives in internal/config: the
// contract's types decode from text.
func TestImportsNoProjectPackage(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: cannot list imports")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	f := strings.Fields(string(out))
	for _, imp := range f[1:] {
		if strings.HasPrefix(imp, f[0]+"/") {
			t.Errorf("the contract imports %s, a package of this module", imp)
		}
		if strings.Contains(imp, "yaml") {
			t.Errorf("the contract imports %s: config decoding belongs in internal/config", imp)
		}
	}
}
