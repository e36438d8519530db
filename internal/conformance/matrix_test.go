package conformance

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/internal/testkit/servetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

// paths are the matrix's columns, in order.
var paths = []string{"put", "redeem", "range", "direct", "tus", "release", "events"}

// verdict is how one cell ended.
type verdict int

const (
	passed     verdict = iota
	failed             // the client did the path and it went wrong
	notOffered         // the client has no way to do the path
	notRun             // the path could not be tried here (a missing tool, service)
)

// outcome is one cell: its verdict and, unless it passed, why (a pass
// may say what of the path the client left out).
type outcome struct {
	verdict verdict
	why     string
}

func pass() outcome { return outcome{verdict: passed} }

func fail(format string, args ...any) outcome {
	return outcome{failed, fmt.Sprintf(format, args...)}
}

func failErr(err error) outcome { return outcome{failed, err.Error()} }

func offeredNot(client, why string) outcome {
	return outcome{notOffered, "not offered by " + client + ": " + why}
}

func skipped(why string) outcome { return outcome{notRun, "not run: " + why} }

// driver does one path with one client against one server.
type driver interface {
	name() string
	// skip says why none of the client's cells can run here, or "".
	skip() string
	run(ctx context.Context, tg *target, path string) outcome
}

// cellTimeout bounds one cell: a hung client fails its cell, not the run.
const cellTimeout = 90 * time.Second

// TestConformanceMatrix runs every client on every path against one
// server per backend and prints the matrix; any failed cell fails the
// test. A backend whose service is not configured, or a client whose
// tool is missing, fills its cells with the reason.
func TestConformanceMatrix(t *testing.T) {
	bin := servetest.Build(t)
	drivers := []driver{goDriver{}, newCLIDriver(bin), newHTTPDriver(), newJSDriver(), newPyDriver(), chromiumDriver{}}
	m := newMatrix()
	var clients []string
	for _, d := range drivers {
		clients = append(clients, d.name())
	}
	for _, b := range backends() {
		tg, why := startTarget(t, bin, b, clients)
		for _, d := range drivers {
			for _, path := range paths {
				m.set(d.name(), b.name, path, cell(t, tg, why, d, path))
			}
		}
		if tg != nil {
			tg.stop(t)
		}
	}
	t.Log("\n" + m.String())
	// go test shows a passing test's log only with -v: CI asks for the
	// table in a file of its own (scripts/test.sh prints it).
	if out := os.Getenv("CLAIMCHECK_TEST_MATRIX_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(m.String()), 0o644); err != nil {
			t.Errorf("CLAIMCHECK_TEST_MATRIX_REPORT: %v", err)
		}
	}
	if n := m.failures(); n > 0 {
		t.Errorf("%d cells of the conformance matrix failed (the table above says which and why)", n)
	}
}

// cell runs one path, or says why it does not.
func cell(t *testing.T, tg *target, backendWhy string, d driver, path string) outcome {
	t.Helper()
	if o, fixed := staticCell(d, path); fixed {
		return o
	}
	if why := d.skip(); why != "" {
		return skipped(why)
	}
	if tg == nil {
		return skipped(backendWhy)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cellTimeout)
	defer cancel()
	o := d.run(ctx, tg, path)
	if p, ok := d.(partial); ok && o.verdict == passed {
		o.why = p.leftOut(path)
	}
	return o
}

// partial is a driver whose client does some path only in part: what it
// leaves out is noted on the passing cell.
type partial interface {
	leftOut(path string) string
}

// offerer is a driver some of whose cells are fixed whatever runs: the
// paths its client does not offer.
type offerer interface {
	notOffered(path string) (why string, ok bool)
}

func staticCell(d driver, path string) (outcome, bool) {
	if o, ok := d.(offerer); ok {
		if why, no := o.notOffered(path); no {
			return offeredNot(d.name(), why), true
		}
	}
	return outcome{}, false
}

// matrix is the cells by client, backend and path, printed as one row
// per client and backend, reasons as numbered notes under the table.
type matrix struct {
	rows  []string // "client / backend", in the order set first
	cells map[string]map[string]outcome
}

func newMatrix() *matrix { return &matrix{cells: map[string]map[string]outcome{}} }

func (m *matrix) set(client, backend, path string, o outcome) {
	row := client + " / " + backend
	if m.cells[row] == nil {
		m.cells[row] = map[string]outcome{}
		m.rows = append(m.rows, row)
	}
	m.cells[row][path] = o
}

func (m *matrix) failures() int {
	n := 0
	for _, r := range m.cells {
		for _, o := range r {
			if o.verdict == failed {
				n++
			}
		}
	}
	return n
}

// String is the table: PASS, or PASS (in part) / FAIL / "-" (not
// offered) / "skip" (not run) with the number of the note that says why.
func (m *matrix) String() string {
	var notes []string
	noteOf := map[string]int{}
	text := func(o outcome) string {
		if o.verdict == passed && o.why == "" {
			return "PASS"
		}
		n, ok := noteOf[o.why]
		if !ok {
			notes = append(notes, o.why)
			n = len(notes)
			noteOf[o.why] = n
		}
		return fmt.Sprintf("%s [%d]", [...]string{"PASS", "FAIL", "-", "skip"}[o.verdict], n)
	}
	grid := [][]string{append([]string{"client / backend"}, paths...)}
	for _, row := range m.rows {
		line := []string{row}
		for _, p := range paths {
			line = append(line, text(m.cells[row][p]))
		}
		grid = append(grid, line)
	}
	var b strings.Builder
	writeGrid(&b, grid)
	b.WriteString("\n")
	for i, n := range notes {
		fmt.Fprintf(&b, "[%d] %s\n", i+1, n)
	}
	return b.String()
}

func writeGrid(b *strings.Builder, grid [][]string) {
	width := make([]int, len(grid[0]))
	for _, line := range grid {
		for i, s := range line {
			width[i] = max(width[i], len(s))
		}
	}
	for _, line := range grid {
		for i, s := range line {
			fmt.Fprintf(b, "| %-*s ", width[i], s)
		}
		b.WriteString("|\n")
	}
}
