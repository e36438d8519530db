package claimcheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runbookFiles are the documents whose code blocks a reader runs as they
// stand: the operations runbook, the migration guide and the
// integrations' READMEs.
func runbookFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("integrations/*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"docs/OPERATIONS.md", "docs/MIGRATING.md"}, files...)
}

// runnableLangs are the fence languages a reader would run.
var runnableLangs = map[string]bool{"sh": true, "bash": true, "console": true, "go": true, "python": true, "js": true}

// TestDocBlocksRunOrSayWhy: every runnable block of the runbook and the
// integrations' READMEs either runs in CI (its info string has the word
// "tour": internal/systemtest/tour_test.go runs it as the READMEs' tours
// are run) or says why not: `norun` and the reason in parentheses, as in
//
//	```sh norun (needs a Kubernetes cluster)
//
// so that a block nobody runs is a decision written beside it, not an
// oversight.
func TestDocBlocksRunOrSayWhy(t *testing.T) {
	for _, file := range runbookFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(b), "\n") {
			trimmed := strings.TrimSpace(line)
			if !strings.HasPrefix(trimmed, "```") {
				continue
			}
			fenced = !fenced
			if !fenced {
				continue
			}
			info := strings.Fields(strings.TrimPrefix(trimmed, "```"))
			if len(info) == 0 || !runnableLangs[info[0]] {
				continue
			}
			rest := strings.Join(info[1:], " ")
			switch {
			case len(info) > 1 && info[1] == "tour":
			case strings.HasPrefix(rest, "norun (") && strings.HasSuffix(rest, ")") && len(rest) > len("norun ()")+10:
			default:
				t.Errorf("%s:%d: a %s block neither runs (`%s tour`) nor says why not (`%s norun (the reason)`)", file, i+1, info[0], info[0], info[0])
			}
		}
	}
}
