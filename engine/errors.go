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
