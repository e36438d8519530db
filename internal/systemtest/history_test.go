package systemtest

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/claimcheck/claimcheck/internal/history"
)

// recorded is a test's history of client calls (internal/history): kept
// in memory, and with its report written to TEST_HISTORY_DIR when
// that is set (scripts/test.sh sets it and prints the reports).
type recorded struct {
	name string
	buf  *lockedBuffer
	rec  *history.Recorder
}

// recordHistory starts a history named name; recorders of each server's
// client come from its rec's With.
func recordHistory(t *testing.T, name string) *recorded {
	t.Helper()
	buf := &lockedBuffer{}
	return &recorded{name: name, buf: buf, rec: history.NewRecorder(nil, buf)}
}

// check runs the checker on the history so far, logs its report and
// fails the test on a violation.
func (h *recorded) check(t *testing.T) {
	t.Helper()
	if err := h.rec.Err(); err != nil {
		t.Fatalf("history %s: %v", h.name, err)
	}
	raw := h.buf.bytes()
	evs, err := history.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("history %s: %v", h.name, err)
	}
	rep := history.Check(evs, history.Options{})
	t.Logf("history %s:\n%s", h.name, rep)
	if dir := os.Getenv("TEST_HISTORY_DIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(dir, h.name+".jsonl"), raw, 0o644)
		if err := os.WriteFile(filepath.Join(dir, h.name+".report"), []byte(rep.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !rep.OK() {
		t.Errorf("history %s broke a lifecycle promise:\n%s", h.name, rep)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}
