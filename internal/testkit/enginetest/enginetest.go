// Package enginetest opens embedded stores (engine.Store) for the tests
// of everything built on the engine: the server, the client, the command
// line, the dispatcher, the storage backends and the integrations.
//
// A test names only what it varies, in an engine.Config: the namespaces
// and their policies, the clock, the storage and metadata URLs or stores,
// the sweeper, the registry. Open fills in a fresh temporary directory
// when the config names none and closes the store when the test ends;
// the zero value of every other field means what it means to
// engine.Open, so a test sees the engine's own defaults.
//
// The engine's own internal tests (package engine) cannot import this
// package, which imports the engine.
package enginetest

import (
	"context"
	"testing"

	"github.com/claimcheck/claimcheck/engine"
)

// Open opens an embedded store on cfg and closes it when tb ends; an
// empty cfg.Data is a new temporary directory of tb. A store that fails
// to open fails tb. A test may close the store itself earlier, to open
// another on the same directory (a restart): closing twice is harmless.
func Open(tb testing.TB, cfg engine.Config) *engine.Store {
	tb.Helper()
	if cfg.Data == "" {
		cfg.Data = tb.TempDir()
	}
	s, err := engine.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("open the engine: %v", err)
	}
	// Registered after TempDir, so it runs before the directory is
	// removed.
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
