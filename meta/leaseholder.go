package meta

import (
	"crypto/rand"
	"fmt"
	"os"
)

// LeaseHolder names this process in leases (TryLease): host, pid and a
// random part, so that two processes, or two holders in one process (the
// sweeper and the event dispatcher), never take each other's lease.
func LeaseHolder() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), b)
}

// LeaseHolding is a live lease as Store.Leases reports it.
type LeaseHolding struct {
	Name   string
	Holder string
	// ReleaseRequested: another holder asked for the lease
	// (Store.RequestLeaseRelease) since Holder took it.
	ReleaseRequested bool
}
