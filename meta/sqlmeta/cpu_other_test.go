//go:build !linux

package sqlmeta

import (
	"testing"
	"time"
)

// processCPU and backendCPU are measured on Linux only; elsewhere the
// benchmark reports no CPU figures.
func processCPU(*testing.B) time.Duration { return 0 }

func backendCPU(*Store, string) (time.Duration, bool) { return 0, false }
