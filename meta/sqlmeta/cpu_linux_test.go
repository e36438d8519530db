//go:build linux

package sqlmeta

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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

// backendCPU is the CPU time used so far by the PostgreSQL server
// processes that serve the connections named app, read from /proc: the
// server's share of the work, when it runs on this machine. ok is false
// when it does not (no such process to read).
func backendCPU(s *Store, app string) (cpu time.Duration, ok bool) {
	rows, err := s.r.QueryContext(context.Background(),
		`SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		return 0, false
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return 0, false
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		// The fields after the command name, which is in parentheses:
		// utime and stime are the 12th and 13th, in clock ticks of
		// 1/100 s (USER_HZ on Linux).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			return 0, false
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		cpu += time.Duration(u+k) * 10 * time.Millisecond
		ok = true
	}
	return cpu, ok && rows.Err() == nil
}
