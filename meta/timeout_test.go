package meta_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// hung is a store whose TryLease waits until its context ends, as a
// database that stopped answering keeps a call waiting.
type hung struct{ meta.Store }

func (hung) TryLease(ctx context.Context, _, _ string, _ time.Time, _ time.Duration) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

// TestTimeoutBoundsAnOperation: with a Timeout, an operation the
// database never answers fails as unavailable naming metadata_timeout
// (a 503 over HTTP; a background job's lease ends its term) instead of
// waiting for ever. A caller that went away first is not a timeout.
func TestTimeoutBoundsAnOperation(t *testing.T) {
	s := meta.Instrument(hung{}, meta.Instrumentation{Timeout: 10 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := s.TryLease(context.Background(), "sweeper", "me", time.Time{}, time.Minute)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, claimcheck.ErrUnavailable) || !strings.Contains(err.Error(), meta.TimeoutSetting) {
			t.Errorf("TryLease on a hung store = %v; want ErrUnavailable naming %s", err, meta.TimeoutSetting)
		}
	case <-time.After(time.Minute): // a guard against the hang, not a measurement
		t.Fatal("TryLease on a hung store did not return")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = meta.Instrument(hung{}, meta.Instrumentation{Timeout: time.Hour})
	if _, err := s.TryLease(ctx, "sweeper", "me", time.Time{}, time.Minute); !errors.Is(err, context.Canceled) || errors.Is(err, claimcheck.ErrUnavailable) {
		t.Errorf("TryLease with the caller gone = %v; want context.Canceled, not unavailable", err)
	}
}
