package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// repoRoot is the repository, from this package's directory.
const repoRoot = "../.."

// scriptDriver runs testdata/driver.* with a client library of this
// repository, one process per cell.
type scriptDriver struct {
	client  string
	command []string // the interpreter and the driver script
	env     []string
	why     string            // why no cell of it can run here, or ""
	missing map[string]string // paths not offered, and why
	part    map[string]string // paths done in part, and what is left out
}

func (d scriptDriver) name() string { return d.client }
func (d scriptDriver) skip() string { return d.why }

func (d scriptDriver) leftOut(path string) string { return d.part[path] }

func (d scriptDriver) notOffered(path string) (string, bool) {
	why, ok := d.missing[path]
	return why, ok
}

// newJSDriver is the JavaScript client (clients/js/src) in Node; it
// needs clients/js/node_modules (npm ci there; scripts/test.sh runs it).
func newJSDriver() scriptDriver {
	d := scriptDriver{
		client:  "JS (Node)",
		command: []string{"node", "testdata/driver.mjs"},
		missing: map[string]string{"range": "the client has no ranged redeem (redeem reads the whole payload)"},
	}
	if _, err := exec.LookPath("node"); err != nil {
		d.why = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(repoRoot, "clients/js/node_modules")); err != nil {
		d.why = "clients/js/node_modules is missing (npm ci in clients/js; scripts/test.sh runs it)"
	}
	return d
}

// newPyDriver is the Python client (clients/python, standard library
// only) on PYTHONPATH.
func newPyDriver() scriptDriver {
	abs, _ := filepath.Abs(filepath.Join(repoRoot, "clients/python"))
	d := scriptDriver{
		client:  "Python",
		command: []string{"python3", "testdata/driver.py"},
		env:     []string{"PYTHONPATH=" + abs, "PYTHONDONTWRITEBYTECODE=1"},
		missing: map[string]string{"events": "the client has no event stream or audit trail reader"},
		part: map[string]string{"direct": "upload_file hashes the file it sends: no upload of wrong bytes, " +
			"and so no retry after one"},
	}
	if _, err := exec.LookPath("python3"); err != nil {
		d.why = "python3 is not installed"
	}
	return d
}

func (d scriptDriver) run(ctx context.Context, tg *target, path string) outcome {
	data, file, err := tg.writePayload(d.client, path)
	if err != nil {
		return failErr(err)
	}
	args := append(d.command[1:len(d.command):len(d.command)], tg.url, tg.key, namespace(d.client, path), path, file)
	cmd := exec.CommandContext(ctx, d.command[0], args...)
	cmd.Env = append(os.Environ(), d.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fail("%s %s: %v: %s", d.command[0], path, err, lastLines(stderr.String(), 4))
	}
	return tg.checkRef(ctx, stdout.Bytes(), data, path)
}

// lastLines is the end of a driver's stderr (a stack trace's last frames
// are the client's own).
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// chromiumDriver is the JavaScript client in Chromium. The matrix does
// not start a browser: clients/js/test/browser.test.js and
// events.browser.test.js (scripts/js-test.sh, playwright-core driving
// the system's Chromium) run these paths, and its cells say where.
type chromiumDriver struct{}

func (chromiumDriver) name() string { return "JS (Chromium)" }
func (chromiumDriver) skip() string { return "" }

// browserSuite is which of the browser suites runs a path, and on which
// backends (none named: every backend).
var browserSuite = map[string]struct {
	file string
	only []string
}{
	"put":     {"browser.test.js (offload from the page)", nil},
	"redeem":  {"browser.test.js", nil},
	"direct":  {"browser.test.js (without the wrong-bytes retry)", nil},
	"tus":     {"tus.test.js (uploadResumable and Uppy, cut mid-way and resumed)", []string{"files", "s3 (MinIO)"}},
	"release": {"browser.test.js", nil},
	"events":  {"events.browser.test.js", []string{"files"}},
}

func (chromiumDriver) notOffered(path string) (string, bool) {
	if path == "range" {
		return "the client has no ranged redeem", true
	}
	return "", false
}

func (d chromiumDriver) run(_ context.Context, tg *target, path string) outcome {
	s, ok := browserSuite[path]
	switch {
	case !ok:
		return skipped(fmt.Sprintf("no browser suite does %s in Chromium", path))
	case len(s.only) > 0 && !slices.Contains(s.only, tg.backend):
		return skipped(fmt.Sprintf("clients/js/test/%s runs on %s storage only", s.file, strings.Join(s.only, " and ")))
	}
	return skipped("the matrix starts no browser; runs in clients/js/test/" + s.file)
}
