package systemtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU returns the user + system CPU time process pid has used so
// far, from /proc (in clock ticks of 10 ms, the Linux default USER_HZ).
func processCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command, which is in parentheses and may hold
	// spaces: state is the first, utime the 12th and stime the 13th.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+s) * 10 * time.Millisecond, true
}

// selfCPU returns the user + system CPU time of this process so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
