package engine

import (
	"fmt"

	"github.com/claimcheck/claimcheck"
)

// invalidf returns a claimcheck.ErrInvalidArgument that says which field
// or value was wrong.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", claimcheck.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// invalidKey marks an error that already names its config key as
// claimcheck.ErrInvalidArgument, without adding words in front of the
// key ("sweeper.interval: ..." stays the start of the message).
type invalidKey struct{ error }

func (e invalidKey) Is(target error) bool { return target == claimcheck.ErrInvalidArgument }
func (e invalidKey) Unwrap() error        { return e.error }
