package claimcheck_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck"
)

// TestGoneReasonsDocumented keeps the one list of gone reasons in the
// contract and the table of docs/HTTP.md equal, so a reason added to the
// code cannot be missing from what API users read (and the other way).
func TestGoneReasonsDocumented(t *testing.T) {
	doc, err := os.ReadFile("docs/HTTP.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "<!-- gone-reasons -->")
	table, _, ok2 := strings.Cut(table, "<!-- /gone-reasons -->")
	if !ok || !ok2 {
		t.Fatal("docs/HTTP.md: no <!-- gone-reasons --> table")
	}
	var documented []claimcheck.GoneReason
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented = append(documented, claimcheck.GoneReason(m[1]))
	}
	if !slices.Equal(documented, claimcheck.GoneReasons) {
		t.Errorf("docs/HTTP.md lists gone reasons %v, the contract %v", documented, claimcheck.GoneReasons)
	}
}
