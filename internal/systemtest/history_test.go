package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/internal/history"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// recorded is a test's history of client calls (internal/history): kept
// in memory, and with its report written to TEST_HISTORY_DIR when
// that is set (scripts/test.sh sets it and prints the reports).
type recorded struct {
	name  string
	buf   *lockedBuffer
	rec   *history.Recorder
	bound time.Duration // the backstop bound of the inventory (0: none taken)
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
	rep := history.Check(evs, history.Options{BackstopBound: h.bound})
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

// inventory records what the store of the serve config cfg holds, as
// `claimcheck fsck --json` reports it, once the load has stopped: an
// object without a blob row counts as unowned after a second (the
// backstop's grace in the copy of cfg fsck reads; nothing writes any
// more). bound is how long an object of a finished claim may wait for
// its collection: the namespace's grace period plus the sweeper's lag.
func (h *recorded) inventory(t *testing.T, bin, cfg string, bound time.Duration) {
	t.Helper()
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if strings.Contains(text, "\nsweeper:\n") {
		text = strings.Replace(text, "\nsweeper:\n", "\nsweeper:\n  backstop_grace: 1s\n", 1)
	} else {
		text += "\nsweeper:\n  backstop_grace: 1s\n"
	}
	fsckCfg := filepath.Join(t.TempDir(), "fsck.yaml")
	if err := os.WriteFile(fsckCfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the last writes are older than that grace
	stdout, stderr, _ := run(t, bin, nil, "fsck", "--json", "--config", fsckCfg)
	var rep sweep.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("fsck --json: %v\n%s\n%s", err, stdout, stderr)
	}
	h.bound = bound
	h.rec.Inventory(history.Inventory{
		Unowned: len(rep.Debris), Missing: len(rep.Missing), QuotaDrift: len(rep.QuotaDrift),
		Reclaim: rep.Reclaimable.Count, OldestReclaim: rep.Reclaimable.Oldest,
	})
}

// TestInventoryNamesAnUnownedObject: an object put into the bucket
// beside the server's own, which no blob owns, is what the inventory
// reports and the checker calls unowned.
func TestInventoryNamesAnUnownedObject(t *testing.T) {
	t.Parallel()
	dsn, _ := testsvc.Postgres(t)
	storage, s3c, bucket := testsvc.S3(t)
	bin := buildBinary(t)
	cfg := writeConfig(t, dsn, storage, `{max_age: 10m}`)
	r := startReplica(t, bin, cfg)
	hist := recordHistory(t, "inventory-unowned")
	rec := hist.rec.With(r.client)
	if _, err := rec.Put(context.Background(), "load", []byte("owned"), claimcheck.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("stray/object"), Body: strings.NewReader("nobody's"),
	})
	if err != nil {
		t.Fatal(err)
	}
	hist.inventory(t, bin, cfg, time.Minute)
	evs, err := history.Read(bytes.NewReader(hist.buf.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rep := history.Check(evs, history.Options{BackstopBound: hist.bound})
	if len(rep.Violations) != 1 || rep.Violations[0].Kind != history.KindUnowned {
		t.Fatalf("want one unowned object:\n%s", rep)
	}
}
