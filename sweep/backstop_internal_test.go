package sweep

import (
	"context"
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
	s := New(Config{OpDelay: time.Nanosecond}, m, b, fc, nil, nil)
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
