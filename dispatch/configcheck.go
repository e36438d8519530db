package dispatch

import (
	"fmt"
	"strconv"

	"github.com/claimcheck/claimcheck"
)

// countError is the error of a count key outside 0..limit, where 0
// stands for zero (the default, or the section's value).
func countError(key string, got, limit int, zero string) error {
	return &claimcheck.FieldError{Field: key, Got: strconv.Itoa(got),
		Reason: fmt.Sprintf("must be from 1 to %d (or 0 for %s)", limit, zero)}
}
