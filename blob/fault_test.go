package blob_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"syscall"
	"testing"

	"github.com/claimcheck/claimcheck/blob"
)

// TestFaultOf: the classification of ADR 0255 on the errors the backends
// produce.
func TestFaultOf(t *testing.T) {
	status := func(s int) error {
		return fmt.Errorf("blob: read k: %w", &blob.StatusError{Status: s, Err: errors.New("x")})
	}
	for _, c := range []struct {
		name string
		err  error
		want blob.Fault
	}{
		{"nil", nil, blob.FaultNone},
		{"not found", fmt.Errorf("blob: read k: %w", blob.ErrNotFound), blob.FaultMissing},
		{"500", status(500), blob.FaultObject},
		{"501", status(501), blob.FaultObject},
		{"502", status(502), blob.FaultUnavailable},
		{"503", status(503), blob.FaultUnavailable},
		{"504", status(504), blob.FaultUnavailable},
		{"429", status(429), blob.FaultUnavailable},
		{"403", status(403), blob.FaultUnavailable},
		{"404", status(404), blob.FaultMissing},
		{"gocloud internal", fmt.Errorf("%w: boom", blob.ErrObjectFault), blob.FaultObject},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, blob.FaultUnavailable},
		{"timeout", context.DeadlineExceeded, blob.FaultUnavailable},
		{"cancelled 500", fmt.Errorf("%w: %w", context.Canceled, status(500)), blob.FaultUnavailable},
		{"EIO", &fs.PathError{Op: "read", Path: "p", Err: syscall.EIO}, blob.FaultObject},
		{"unknown", errors.New("something"), blob.FaultUnavailable},
	} {
		if got := blob.FaultOf(c.err); got != c.want {
			t.Errorf("%s: FaultOf = %v, want %v", c.name, got, c.want)
		}
	}
}
