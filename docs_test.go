package claimcheck_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

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

// TestDocLinks checks the relative links of the repository's Markdown
// files: the file a link names exists, and the #anchor it names is a
// heading of that file (as the forges make anchors from headings), so a
// section renamed or moved cannot leave links behind.
func TestDocLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	headingsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		anchors[path] = a
		data, err := os.ReadFile(path)
		if err != nil {
			return a
		}
		seen := map[string]int{}
		for _, line := range markdownLines(string(data)) {
			h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
			if !ok || !strings.HasPrefix(line, "#") {
				continue
			}
			slug := headingSlug(h)
			if n := seen[slug]; n > 0 {
				a[slug+"-"+strconv.Itoa(n)] = true
			} else {
				a[slug] = true
			}
			seen[slug]++
		}
		return a
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range markdownLines(string(data)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.Join(filepath.Dir(path), file)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s: link %s: no file %s", path, target, dest)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(dest, ".md") && !headingsOf(dest)[anchor] {
					t.Errorf("%s: link %s: %s has no heading with anchor #%s", path, target, dest, anchor)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// markdownLines returns the lines of a Markdown text outside fenced code
// blocks.
func markdownLines(text string) []string {
	var out []string
	fenced := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// headingSlug is the anchor the forges give a heading: lower case, what
// is not a letter, digit, space, hyphen or underscore dropped, spaces as
// hyphens.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
