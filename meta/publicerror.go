package meta

import (
	"context"
	"errors"
	"fmt"

	"github.com/claimcheck/claimcheck"
)

// PublicError reports an error of a metadata store as one of the
// contract's, for op: a quota refusal is ErrQuotaExceeded, a missing row
// ErrNotFound, a cancelled or expired context keeps its kind, and
// anything else is ErrUnavailable. The engine and the integrity checks
// both answer through it, so a caller sees the same kinds from either.
func PublicError(op string, err error) error {
	var qe *QuotaError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &qe):
		return fmt.Errorf("%s: %w: %s", op, claimcheck.ErrQuotaExceeded, qe.Error())
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%s: %w", op, claimcheck.ErrNotFound)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", op, err)
	default:
		return fmt.Errorf("%s: %w: %v", op, claimcheck.ErrUnavailable, err)
	}
}
