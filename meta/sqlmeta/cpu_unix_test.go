//go:build unix

package sqlmeta

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time this process has used (user and system, all
// threads). Per finished claim it is a rate that does not depend on what
// else the machine runs: on SQLite it is the whole cost of finishing (the
// database runs in the process), on PostgreSQL the client's share.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
