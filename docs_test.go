package claimcheck_test

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/azurestore"
	"github.com/claimcheck/claimcheck/blob/gcsstore"
	"github.com/claimcheck/claimcheck/blob/s3store"
	"github.com/claimcheck/claimcheck/internal/cli"
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

// TestConfigurationDocumented holds docs/CONFIGURATION.md to the config
// the server loads: every YAML block there decodes strictly, as a config
// file would; every key it names is one the loader knows; and every key
// the loader knows is in one of its blocks. Key paths are the loader's
// (config.Keys): the names under tenants: and namespaces: match "*", a
// list's items' keys sit under the list's key, and a key whose value is
// a list or mapping of scalars (labels) is one key. A namespace takes
// every key of defaults: (both are a claimcheck.Policy), so the page
// documents those once, under defaults:.
func TestConfigurationDocumented(t *testing.T) {
	doc, err := os.ReadFile("docs/CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	known := cli.ConfigKeys()
	documented := map[string]bool{}
	blocks := yamlBlocks(string(doc))
	if len(blocks) == 0 {
		t.Fatal("docs/CONFIGURATION.md has no ```yaml block")
	}
	for _, b := range blocks {
		if err := cli.CheckConfig([]byte(b.text)); err != nil {
			t.Errorf("docs/CONFIGURATION.md:%d: the block is not a valid config: %v", b.line, err)
		}
		var root yaml.Node
		if err := yaml.Unmarshal([]byte(b.text), &root); err != nil {
			t.Fatalf("docs/CONFIGURATION.md:%d: %v", b.line, err)
		}
		for _, p := range yamlKeyPaths(&root, nil) {
			documented[strings.Join(p, ".")] = true
			if !slices.ContainsFunc(known, func(k string) bool { return keyOverlap(strings.Split(k, "."), p) }) {
				t.Errorf("docs/CONFIGURATION.md:%d documents %s, which the config does not know", b.line, strings.Join(p, "."))
			}
		}
	}
	for _, k := range known {
		look := k
		if rest, ok := strings.CutPrefix(k, "namespaces.*."); ok {
			look = "defaults." + rest
		}
		if !slices.ContainsFunc(slices.Collect(maps.Keys(documented)), func(d string) bool {
			return keyMatch(strings.Split(look, "."), strings.Split(d, "."))
		}) {
			t.Errorf("docs/CONFIGURATION.md does not document the config key %s", k)
		}
	}
}

type yamlBlock struct {
	line int // of the opening fence
	text string
}

// yamlBlocks returns the fenced ```yaml blocks of a Markdown text.
func yamlBlocks(text string) []yamlBlock {
	var out []yamlBlock
	var cur *yamlBlock
	n := 0
	for line := range strings.Lines(text) {
		n++
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```yaml":
			cur = &yamlBlock{line: n}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line
		}
	}
	return out
}

// yamlKeyPaths returns the path of every key of a YAML tree, at every
// level; a list's items' keys are under the list's key.
func yamlKeyPaths(n *yaml.Node, path []string) [][]string {
	var out [][]string
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			out = append(out, yamlKeyPaths(c, path)...)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := append(slices.Clone(path), n.Content[i].Value)
			out = append(out, p)
			out = append(out, yamlKeyPaths(n.Content[i+1], p)...)
		}
	}
	return out
}

// keyMatch reports whether a documented path is the key path pattern
// ("*" matches any one name).
func keyMatch(pattern, path []string) bool {
	return len(pattern) == len(path) && keyOverlap(pattern, path)
}

// keyOverlap reports whether the shorter of a key path pattern and a
// documented path matches the start of the other: the documented path
// leads to the key (tenants.acme), is the key, or lies inside a key
// whose value is a mapping of scalars (labels.team).
func keyOverlap(pattern, path []string) bool {
	for i := range min(len(pattern), len(path)) {
		if pattern[i] != "*" && pattern[i] != path[i] {
			return false
		}
	}
	return true
}

// adrFile names an ADR: 0123-some-title.md.
var adrFile = regexp.MustCompile(`^(\d{4})-[a-z0-9-]+\.md$`)

// adrs returns the ADR files of docs/adr by number.
func adrs(t *testing.T) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("docs/adr")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range entries {
		if m := adrFile.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			out[n] = filepath.Join("docs/adr", e.Name())
		}
	}
	if len(out) == 0 {
		t.Fatal("no ADRs in docs/adr")
	}
	return out
}

// TestADRHeadings keeps one heading style for every ADR: its title is
// "# N. Title", N the file's number without leading zeros.
func TestADRHeadings(t *testing.T) {
	for n, path := range adrs(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if !regexp.MustCompile(`^# ` + strconv.Itoa(n) + `\. \S`).MatchString(first) {
			t.Errorf("%s: the title is %q; want \"# %d. Title\"", path, first, n)
		}
	}
}

// adrLinks is what the ADRs' headers (the text before the first "## "
// section) say of amendments, on lines that start with "Amends" or
// "Amended by" and link the other ADR's file: amends[A][B] when A amends
// B, amendedBy[A][B] when A is amended by B. A header whose status speaks
// of amending ("amends", "amended by") without such a line is an error.
func adrLinks(t *testing.T, files map[int]string) (amends, amendedBy map[int]map[int]bool) {
	t.Helper()
	link := regexp.MustCompile(`\]\((\d{4})-[a-z0-9-]+\.md\)`)
	amends, amendedBy = map[int]map[int]bool{}, map[int]map[int]bool{}
	for n, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		header, _, _ := strings.Cut(string(data), "\n## ")
		amends[n], amendedBy[n] = map[int]bool{}, map[int]bool{}
		hasAmends, hasAmendedBy := false, false
		for line := range strings.Lines(header) {
			set := amends[n]
			switch {
			case strings.HasPrefix(line, "Amended by"):
				set, hasAmendedBy = amendedBy[n], true
			case strings.HasPrefix(line, "Amends"):
				hasAmends = true
			default:
				continue
			}
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				other, _ := strconv.Atoi(m[1])
				if _, ok := files[other]; !ok {
					t.Errorf("%s: links ADR %d, which does not exist", path, other)
				}
				set[other] = true
			}
		}
		status := strings.ToLower(header)
		if strings.Contains(status, "amends") && !hasAmends {
			t.Errorf("%s: says it amends an ADR, but has no \"Amends\" line linking it", path)
		}
		if strings.Contains(status, "amended by") && !hasAmendedBy {
			t.Errorf("%s: says it is amended, but has no \"Amended by\" line linking the amendment", path)
		}
	}
	return amends, amendedBy
}

// TestADRAmendmentsLinked checks that an amendment is linked both ways:
// when ADR A's header links B as amended, B's header must link A as
// amending it, and the other way round.
func TestADRAmendmentsLinked(t *testing.T) {
	files := adrs(t)
	amends, amendedBy := adrLinks(t, files)
	for a, bs := range amends {
		for b := range bs {
			if !amendedBy[b][a] {
				t.Errorf("%s amends %s, whose header has no \"Amended by\" line linking it back", files[a], files[b])
			}
		}
	}
	for a, bs := range amendedBy {
		for b := range bs {
			if !amends[b][a] {
				t.Errorf("%s is amended by %s, whose header has no \"Amends\" line linking it", files[a], files[b])
			}
		}
	}
}

// TestADRIndexAmendments checks that each ADR's line in the index
// (docs/adr/README.md) names the same amendments as its header: the
// numbers after "amended by" and after "amends" in the line's notes.
func TestADRIndexAmendments(t *testing.T) {
	files := adrs(t)
	amends, amendedBy := adrLinks(t, files)
	data, err := os.ReadFile("docs/adr/README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^\| \[(\d{4})\]`)
	notes := map[string]*regexp.Regexp{
		"amended by": regexp.MustCompile(`amended by ([\d, ]+)`),
		"amends":     regexp.MustCompile(`amends ([\d, ]+)`),
	}
	listed := map[int]bool{}
	for line := range strings.Lines(string(data)) {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		listed[n] = true
		for word, want := range map[string]map[int]bool{"amended by": amendedBy[n], "amends": amends[n]} {
			got := map[int]bool{}
			for _, g := range notes[word].FindAllStringSubmatch(line, -1) {
				for _, num := range regexp.MustCompile(`\d{4}`).FindAllString(g[1], -1) {
					k, _ := strconv.Atoi(num)
					got[k] = true
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("docs/adr/README.md, ADR %d: the index says %s %v, its header %v", n, word, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
		}
	}
	for n, path := range files {
		if !listed[n] {
			t.Errorf("%s has no line in docs/adr/README.md", path)
		}
	}
}

// TestPackageTables checks that every Go package directory of the
// repository (the root module, the integration modules, deploy/ and the
// scripts' modules; not testdata or node_modules) has a row in the
// package table of docs/ARCHITECTURE.md and in the Layout table of
// README.md. A row names its packages in its first column as code spans:
// a path (`blob/filestore`, with or without a trailing slash), a brace
// list (`blob/{filestore,memstore}`), a glob (`scripts/*/`), a bare name
// after a path naming a sibling of it (`integrations/temporal`, `nats`),
// a file naming its directory (`claimcheck.go`), or `claimcheck` for the
// root package.
func TestPackageTables(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && path != ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			if dir := filepath.ToSlash(filepath.Dir(path)); !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []struct{ file, heading string }{
		{"docs/ARCHITECTURE.md", "## Packages and the direction of imports"},
		{"README.md", "## Layout"},
	} {
		patterns := tablePackages(t, table.file, table.heading)
		for _, dir := range dirs {
			if !slices.ContainsFunc(patterns, func(p string) bool { ok, _ := path.Match(p, dir); return ok }) {
				t.Errorf("%s: the table under %q has no row for the package directory %s", table.file, table.heading, dir)
			}
		}
	}
}

// tablePackages returns the package paths (path.Match patterns) that
// the first column of the first table under heading names.
func tablePackages(t *testing.T, file, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s: no heading %q", file, heading)
	}
	span := regexp.MustCompile("`([^`]+)`")
	var out []string
	inTable := false
	for line := range strings.Lines(section) {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		prev := ""
		for _, m := range span.FindAllStringSubmatch(cells[1], -1) {
			name := strings.TrimSuffix(m[1], "/")
			switch {
			case name == "claimcheck":
				name = "."
			case strings.HasSuffix(name, ".go"):
				name = path.Dir(name)
			case !strings.Contains(m[1], "/") && strings.Contains(prev, "/"):
				name = path.Join(path.Dir(prev), name)
			}
			prev = name
			out = append(out, expandBraces(name)...)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no package table under %q", file, heading)
	}
	return out
}

// expandBraces expands one brace list: a/{b,c} is a/b and a/c.
func expandBraces(s string) []string {
	open, end := strings.Index(s, "{"), strings.Index(s, "}")
	if open < 0 || end < open {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[open+1:end], ",") {
		out = append(out, expandBraces(s[:open]+alt+s[end+1:])...)
	}
	return out
}

// TestDirectUploadsDocumentedPerStore keeps docs/HTTP.md's "Direct
// uploads" true for every store that presigns: each header a store's
// PresignPut names (the X-… literals of blob/*/presign.go) is in the
// section, as are the status each service answers a PUT with and, for
// the stores whose URLs only create (GCS, Azure: ADR 0230), the order
// that gets past wrong bytes: confirm, which deletes them, then PUT.
func TestDirectUploadsDocumentedPerStore(t *testing.T) {
	doc, err := os.ReadFile("docs/HTTP.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Direct uploads\n")
	if !ok {
		t.Fatal(`docs/HTTP.md has no "## Direct uploads" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	flat := strings.Join(strings.Fields(section), " ")
	presigners, err := filepath.Glob("blob/*/presign.go")
	if err != nil || len(presigners) < 3 {
		t.Fatalf("presign.go files %v (%v): want s3store's, gcsstore's and azurestore's", presigners, err)
	}
	header := regexp.MustCompile(`"(X-[A-Za-z0-9-]+)"(?::\s*"([^"]+)")?`)
	for _, f := range presigners {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range header.FindAllStringSubmatch(string(src), -1) {
			want := "`" + m[1]
			if m[2] != "" {
				want += ": " + m[2] + "`" // a fixed value: the header as sent
			}
			if !strings.Contains(flat, want) {
				t.Errorf("docs/HTTP.md, Direct uploads: %s sends %s, the section does not name it", f, strings.Trim(want, "`"))
			}
		}
	}
	for _, want := range []string{
		"`X-Amz-Checksum-Sha256`", // S3's signed checksum (the SDK's header)
		"`201` (Azure)",           // Put Blob answers 201 Created
		"`200` (S3, GCS)",         // PutObject and the XML API answer 200
		"`204` (this server)",     // server/uploads.go
		"confirm (`422`, which deletes the object), PUT again", // create-only URLs
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("docs/HTTP.md, Direct uploads: does not say %s", want)
		}
	}
	if strings.Contains(flat, "PUT again and confirm |") {
		t.Error("docs/HTTP.md, Direct uploads: the 422 row says PUT again and confirm, which GCS's and Azure's create-only URLs refuse")
	}
}

// TestBucketCORSTableNamesEachStoresHeaders keeps docs/OPERATIONS.md's
// bucket CORS table true per storage backend: each store that sets up
// bucket CORS (a blob.CORSConfigurer) has a row of its own, naming its
// URL scheme, and that row's rule by hand allows every header the
// store's presigned PUT sends (CORSRequestHeaders), or a browser's
// preflight fails.
func TestBucketCORSTableNamesEachStoresHeaders(t *testing.T) {
	doc, err := os.ReadFile("docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "| ") && strings.Contains(l, "CORS") {
			rows = append(rows, l)
		}
	}
	for _, c := range []struct {
		name, row string // the service, and what only its row has
		store     blob.CORSConfigurer
	}{
		{"S3", "| AWS S3 |", &s3store.Bucket{}},
		{"GCS", "(`gs://`)", &gcsstore.Bucket{}},
		{"Azure", "(`azblob://`)", &azurestore.Bucket{}},
	} {
		i := slices.IndexFunc(rows, func(r string) bool { return strings.Contains(r, c.row) })
		if i < 0 {
			t.Errorf("docs/OPERATIONS.md: the bucket CORS table has no %s row (%s)", c.name, c.row)
			continue
		}
		for _, h := range c.store.CORSRequestHeaders() {
			if !strings.Contains(strings.ToLower(rows[i]), strings.ToLower(h)) {
				t.Errorf("docs/OPERATIONS.md: the bucket CORS row of %s does not allow %s, a header its presigned PUT sends", c.name, h)
			}
		}
	}
}

// TestHelmTemplateNamesKubeVersion: without a cluster `helm template`
// checks the chart's kubeVersion against its own default, which a helm
// built by go install leaves at 1.20, so the chart (Kubernetes 1.27 and
// later) is refused unless the line passes --kube-version. The
// deployment docs render the chart that way, with a version the chart
// accepts.
func TestHelmTemplateNamesKubeVersion(t *testing.T) {
	chart, err := os.ReadFile("deploy/helm/claimcheck/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^kubeVersion: ">=1\.(\d+)`).FindSubmatch(chart)
	if m == nil {
		t.Fatal(`deploy/helm/claimcheck/Chart.yaml: no kubeVersion ">=1.N…"`)
	}
	least, _ := strconv.Atoi(string(m[1]))
	lines := 0
	for _, f := range []string{"README.md", "docs/OPERATIONS.md"} {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(doc), "\\\n", " ")
		for _, l := range strings.Split(text, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "helm template ") {
				continue
			}
			lines++
			v := regexp.MustCompile(`--kube-version[ =]v?1\.(\d+)`).FindStringSubmatch(l)
			if v == nil {
				t.Errorf("%s: %q has no --kube-version 1.N: a helm built by go install refuses the chart without it", f, l)
			} else if n, _ := strconv.Atoi(v[1]); n < least {
				t.Errorf("%s: %q: --kube-version 1.%d, the chart needs 1.%d or later", f, l, n, least)
			}
		}
	}
	if lines == 0 {
		t.Error("docs/OPERATIONS.md has no helm template line: say how to render the chart without a cluster")
	}
}
