package sweep

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/blob"
	_ "github.com/claimcheck/claimcheck/blob/memstore"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// TestTickBackstopSchedule: the background loop runs the backstop only
// after idle_grace without traffic, and once a pass is done, not again
// before backstop_interval.
func TestTickBackstopSchedule(t *testing.T) {
	ctx := context.Background()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := blob.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fc := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := New(Config{OpDelay: time.Nanosecond}, m, b, nil, fc, nil, nil)
	cursor := func() string {
		v, err := m.Cursor(ctx, BackstopCursor)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	s.Touch()
	s.tickBackstop(ctx)
	if c := cursor(); c != "" {
		t.Fatalf("backstop ran under traffic: cursor %q", c)
	}
	fc.Advance(s.cfg.IdleGrace)
	s.tickBackstop(ctx)
	first := cursor()
	if !strings.HasPrefix(first, "done:") {
		t.Fatalf("after idle_grace the backstop did not finish its pass: cursor %q", first)
	}
	fc.Advance(time.Hour)
	s.tickBackstop(ctx)
	if c := cursor(); c != first {
		t.Errorf("backstop ran again an hour after a pass: %q → %q", first, c)
	}
	fc.Advance(s.cfg.BackstopInterval)
	s.tickBackstop(ctx)
	if c := cursor(); c == first || !strings.HasPrefix(c, "done:") {
		t.Errorf("backstop did not run again after backstop_interval: %q → %q", first, c)
	}
}

// TestBackgroundErrorsLogged: when the metadata store fails, the
// background loop's steps that only read a cursor or take a lease (the
// backstop's Due, the scrub lease, the pruning lease) say so in the log
// instead of skipping the tick silently.
func TestBackgroundErrorsLogged(t *testing.T) {
	ctx := context.Background()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := blob.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fc := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	s := New(Config{OpDelay: time.Nanosecond, Scrub: true, EventRetention: time.Hour}, m, b, nil, fc, log, nil)
	if _, err := s.TickScrub(ctx); err != nil { // the first tick only starts the budget's clock
		t.Fatal(err)
	}
	m.Close()
	fc.Advance(s.cfg.IdleGrace + time.Minute)

	s.tickBackstop(ctx)
	if _, err := s.TickScrub(ctx); err == nil {
		t.Error("TickScrub on a closed metadata store: no error")
	}
	s.tickRetention(ctx)
	for _, want := range []string{
		"reading the backstop's cursor failed",
		"taking the scrub lease failed",
		"taking the pruning lease failed",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log has no %q:\n%s", want, buf.String())
		}
	}
}
