//go:build !linux

package systemtest

import "time"

// processCPU is not measured outside Linux.
func processCPU(int) (time.Duration, bool) { return 0, false }

// selfCPU is not measured outside Linux.
func selfCPU() time.Duration { return 0 }

// commandsCPU is not measured outside Linux.
func commandsCPU(...string) time.Duration { return 0 }
