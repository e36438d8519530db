//go:build !unix

package sqlmeta

import (
	"testing"
	"time"
)

// processCPU is not measured here; the benchmark reports 0.
func processCPU(*testing.B) time.Duration { return 0 }
