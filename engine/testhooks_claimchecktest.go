//go:build claimchecktest

package engine

import (
	"context"
	"fmt"
	"os"
)

// In a binary built with the claimchecktest tag (the system tests' crash
// tests), CLAIMCHECK_TEST_FAILPOINT_AFTER_OBJECT_WRITE naming a file at
// process start makes every put block after its object is written and
// before its commit, creating that file first, so a test can kill -9 the
// process at exactly that point.
func init() {
	marker := os.Getenv("CLAIMCHECK_TEST_FAILPOINT_AFTER_OBJECT_WRITE")
	if marker == "" {
		return
	}
	processHooks.afterObjectWrite = func(ctx context.Context) error {
		if err := os.WriteFile(marker, []byte("object written, commit held\n"), 0o644); err != nil {
			return fmt.Errorf("failpoint: %w", err)
		}
		<-ctx.Done()
		return ctx.Err()
	}
}
