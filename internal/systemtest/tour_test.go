package systemtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The READMEs' tours are tests: every fenced block whose info string has
// the word "tour" (```sh tour, ```go tour, ```python tour, ```go.mod tour)
// is run here as a user would run it, so a README that stops working
// fails the build. The tours make their own input files, and a
// ```sh tour module block holds the commands that build and run each go
// block in a module of its own: nothing the README does not say is done
// for it. Other blocks (configuration, excerpts, HTML) are never
// run. The JavaScript blocks (```js tour) run in the JavaScript suite,
// against the package as npm installs it (clients/js/test/package.test.js).
//
// One server serves every tour: the one the main README's `serve &` line
// starts (on a free port instead of 8080; the other READMEs must start it
// the same way). Client commands reach it through $CLAIMCHECK_SERVER, and
// programs through their literal http://127.0.0.1:8080, which is replaced
// by its URL.

// tourReadmes are the files whose tour blocks run here, in this order
// (the runbook's and the migration guide's blocks take up where the
// README's tour left off: its server, its ./claimcheck and its files).
var tourReadmes = []string{"README.md", "clients/python/README.md", "docs/OPERATIONS.md", "docs/MIGRATING.md"}

// integrationReadmes hold a ```go.mod tour block: the lines a module
// outside this repository adds to use the integration.
var integrationReadmes = []string{"integrations/kafka", "integrations/nats", "integrations/temporal"}

// block is one fenced block of a Markdown file.
type block struct {
	file string
	line int    // of the opening fence
	lang string // the info string's first word
	// module: an sh block whose commands run in each go block's module
	// (```sh tour module), not in the tour's directory.
	module bool
	code   string
}

var fence = regexp.MustCompile("^(```+)\\s*(.*)$")

// tourBlocks returns the blocks of file (relative to the repository's
// root) whose info string has the word "tour".
func tourBlocks(t *testing.T, file string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), file))
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	var open string
	for i, l := range strings.Split(string(data), "\n") {
		m := fence.FindStringSubmatch(l)
		switch {
		case cur == nil && m != nil:
			info := strings.Fields(m[2])
			open = m[1]
			cur = &block{file: file, line: i + 1}
			if len(info) > 0 {
				cur.lang = info[0]
			}
			if !contains(info[min(1, len(info)):], "tour") {
				cur.lang = "-" // a block that does not run
			}
			cur.module = contains(info[min(1, len(info)):], "module")
		case cur != nil && m != nil && m[1] == open && m[2] == "":
			if cur.lang != "-" {
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil:
			cur.code += l + "\n"
		}
	}
	return out
}

func contains(s []string, w string) bool {
	for _, x := range s {
		if x == w {
			return true
		}
	}
	return false
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// tour is the state the blocks share: the work directory with the
// files they name, the binary, the server.
type tour struct {
	t         *testing.T
	root, dir string
	bin       string
	env       []string
	serveLine string
	url       string
}

func TestREADMETour(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("SKIP: bash not found; the README tours did not run")
	}
	tr := &tour{t: t, root: repoRoot(t), dir: t.TempDir(), bin: buildBinary(t)}
	tr.env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(tr.dir, ".cache"), "CLAIMCHECK_API_KEY=")
	if err := os.Link(tr.bin, filepath.Join(tr.dir, "claimcheck")); err != nil {
		data, rerr := os.ReadFile(tr.bin)
		if rerr != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tr.dir, "claimcheck"), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ran := 0
	for _, f := range tourReadmes {
		for _, b := range tourBlocks(t, f) {
			where := fmt.Sprintf("%s:%d", b.file, b.line)
			switch {
			case b.module:
				continue // run by every go block, in its module
			case b.lang == "sh":
				tr.shell(where, b.code)
			case b.lang == "go":
				tr.goProgram(where, b.code)
			case b.lang == "python":
				tr.python(where, b.code)
			case b.lang == "go.mod":
				continue // the lines every go block's module is built with
			default:
				t.Fatalf("%s: a tour block of %q: this test runs sh, go and python", where, b.lang)
			}
			ran++
		}
	}
	if ran < 5 || tr.url == "" {
		t.Fatalf("%d tour blocks ran (server %q): the markers are gone", ran, tr.url)
	}
}

var (
	exitComment = regexp.MustCompile(`#\s*exit (\d+)`)
	serveLine   = regexp.MustCompile(`^((?:[A-Z_]+=\S+\s+)*)\./claimcheck serve([^&#]*)&\s*(#.*)?$`)
)

// shell runs a sh block line by line (a line ending in \ goes on): the
// build of the binary is the test's own, the `serve &` line starts the
// one server, every other line must exit 0, or the code its comment
// names (# exit 4).
func (tr *tour) shell(where, code string) {
	t := tr.t
	var lines []string
	pending := ""
	for _, l := range strings.Split(code, "\n") {
		if strings.HasSuffix(l, "\\") {
			pending += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, pending+l)
		pending = ""
	}
	for _, l := range lines {
		cmd := strings.TrimSpace(l)
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		if cmd == "go build -o claimcheck ./cmd/claimcheck" {
			continue // built once for every test of the package
		}
		if m := serveLine.FindStringSubmatch(cmd); m != nil {
			tr.serve(where, cmd, m)
			continue
		}
		if tr.url == "" {
			t.Fatalf("%s: %q runs before the tour started a server", where, cmd)
		}
		want := 0
		if m := exitComment.FindStringSubmatch(cmd); m != nil {
			want, _ = strconv.Atoi(m[1])
		}
		c := exec.Command("bash", "-c", cmd)
		c.Dir = tr.dir
		c.Env = append(tr.env, "CLAIMCHECK_SERVER="+tr.url)
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		got := 0
		if ee, ok := err.(*exec.ExitError); ok {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: %s\nexit %d, want %d\nstdout: %s\nstderr: %s", where, cmd, got, want, stdout.String(), stderr.String())
		}
	}
}

// serve starts the tour's server from its line (its variables and
// flags), on a free port; every README starts it the same way.
func (tr *tour) serve(where, line string, m []string) {
	t := tr.t
	cmd := strings.TrimSpace(line[:strings.Index(line, "&")])
	if tr.url != "" {
		if cmd != tr.serveLine {
			t.Fatalf("%s: %q starts the server otherwise than the first tour's %q: the tours share one server", where, cmd, tr.serveLine)
		}
		return
	}
	tr.serveLine = cmd
	tr.url, _ = startServerEnv(t, tr.bin, tr.dir, strings.Fields(m[1]), strings.Fields(m[2])...)
}

// program replaces the tours' server address by the test server's.
func (tr *tour) program(code string) string {
	return strings.ReplaceAll(code, "http://127.0.0.1:8080", tr.url)
}

// goProgram runs a go block as a user of this repository would: as the
// main.go of a module outside it, whose go.mod is `go mod init`'s plus
// the README's ```go.mod tour lines, beside a link named claimcheck to
// the repository (the replace path ../claimcheck), with the tour's
// big.json; then the README's ```sh tour module commands, line by line,
// in that directory. Nothing else is given: no go.sum, no -mod=mod. The
// network stays off (GOPROXY=off): the module cache has what the
// repository's own module uses.
func (tr *tour) goProgram(where, code string) {
	t := tr.t
	base := t.TempDir()
	if err := os.Symlink(tr.root, filepath.Join(base, "claimcheck")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "app")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	big, err := os.ReadFile(filepath.Join(tr.dir, "big.json"))
	if err != nil {
		t.Fatalf("%s: the tour made no big.json: %v", where, err)
	}
	files := map[string][]byte{
		"go.mod":   []byte("module example.com/app\n\ngo 1.26\n\n" + rootGoMod(t)),
		"main.go":  []byte(tr.program(code)),
		"big.json": big,
	}
	for f, data := range files {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local")
	for _, l := range strings.Split(moduleSteps(t), "\n") {
		cmd := strings.TrimSpace(l)
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		if cmd == "go mod tidy" || strings.HasPrefix(cmd, "go mod tidy ") {
			// Offline, tidy cannot look up the modules only the tests of
			// dependencies import (the cache has what builds need): -e
			// records every other one, as the online tidy would.
			cmd = "go mod tidy -e" + strings.TrimPrefix(cmd, "go mod tidy")
		}
		c := exec.Command("bash", "-c", cmd)
		c.Dir, c.Env = dir, env
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: in the program's module, %s: %v\n%s", where, cmd, err, out)
		}
	}
}

// moduleSteps is the README's ```sh tour module block: the commands
// that build and run a go block in its module.
func moduleSteps(t *testing.T) string {
	for _, b := range tourBlocks(t, "README.md") {
		if b.module {
			return b.code
		}
	}
	t.Fatal("README.md has no ```sh tour module block")
	return ""
}

// rootGoMod is the README's ```go.mod tour block: what a module outside
// the repository adds to its go.mod to use this one.
func rootGoMod(t *testing.T) string {
	for _, b := range tourBlocks(t, "README.md") {
		if b.lang == "go.mod" {
			return b.code
		}
	}
	t.Fatal("README.md has no ```go.mod tour block")
	return ""
}

// goModule writes a module named name beside a link named claimcheck to
// the repository (so the README's replace path ../claimcheck holds), with
// the go.mod lines given, main.go and the go.sum lines of the modules it
// may need, and builds it (or, without build, loads its packages) without
// network (GOPROXY=off: the module cache has what the repository's own
// modules use) and outside go.work.
func goModule(t *testing.T, root, name, gomod, main string, build bool, sums ...string) string {
	t.Helper()
	base := t.TempDir()
	if err := os.Symlink(root, filepath.Join(base, "claimcheck")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "app")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mod := "module " + name + "\n\ngo 1.26\n\n" + gomod
	var sum []byte
	for _, f := range append([]string{"go.sum"}, sums...) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		sum = append(sum, b...)
	}
	for f, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": []byte(main)} {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"build", "-o", "prog", "."}
	if !build {
		// Resolve the module graph and load every package it needs (the
		// replace lines at work), without compiling them.
		args = []string{"list", "-deps", "."}
	}
	c := exec.Command("go", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("go build of a module outside the repository, go.mod:\n%s\n%v\n%s", mod, err, out)
	}
	return dir
}

// python runs a python block with the client of this tree on its path.
func (tr *tour) python(where, code string) {
	t := tr.t
	if _, err := exec.LookPath("python3"); err != nil {
		t.Logf("SKIP: python3 not found; %s did not run", where)
		return
	}
	c := exec.Command("python3", "-")
	c.Dir = tr.dir
	c.Stdin = strings.NewReader(tr.program(code))
	c.Env = append(tr.env, "PYTHONPATH="+filepath.Join(tr.root, "clients", "python"), "PYTHONDONTWRITEBYTECODE=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: python3 failed: %v\n%s", where, err, out)
	}
}

// The integration modules' READMEs say what a module outside this
// repository adds to its go.mod until the root module is published; a
// module that does exactly that builds against each. Under -short its
// packages are only loaded (modules resolved, every import found): the
// integrations' own suites compile the same code, and the Temporal SDK
// is minutes of compiling on CI's two cores.
func TestIntegrationReadmesReplace(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	for _, dir := range integrationReadmes {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var gomod string
			for _, b := range tourBlocks(t, dir+"/README.md") {
				if b.lang == "go.mod" {
					gomod = b.code
				}
			}
			if gomod == "" {
				t.Fatalf("%s/README.md has no ```go.mod tour block", dir)
			}
			path := "github.com/claimcheck/claimcheck/" + dir
			main := "package main\n\nimport _ " + strconv.Quote(path) + "\n\nfunc main() {}\n"
			goModule(t, root, "example.com/app", gomod, main, !testing.Short(), dir+"/go.sum")
		})
	}
}

// One version, the VERSION file's, is the Go module's release (the tag
// scripts/release.sh stamps into claimcheck version) and both client
// packages' version: a release bumps the file and the packages with it.
func TestOneVersion(t *testing.T) {
	root := repoRoot(t)
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := strings.TrimSpace(read("VERSION"))
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(want) {
		t.Fatalf("VERSION %q is not MAJOR.MINOR.PATCH", want)
	}
	for file, re := range map[string]string{
		"clients/js/package.json":               `(?m)^  "version": "([^"]+)"`,
		"clients/js/package-lock.json":          `(?m)^  "version": "([^"]+)"`,
		"clients/python/claimcheck/_version.py": `(?m)^__version__ = "([^"]+)"`,
	} {
		m := regexp.MustCompile(re).FindStringSubmatch(read(file))
		if m == nil || m[1] != want {
			t.Errorf("%s: version %v, VERSION says %s", file, m, want)
		}
	}
}
