package api

import (
	"bytes"
	"fmt"

	"github.com/claimcheck/claimcheck"
)

// MaxReleaseBody bounds the body of POST /v1/claims/{id}/release.
const MaxReleaseBody = 64 << 10

// ParseReleaseRequest decodes the optional body of a release: nothing
// (or only white space), or one JSON object {"consumer":"NAME"} with no
// other field. Errors wrap claimcheck.ErrInvalidArgument.
func ParseReleaseRequest(b []byte) (ReleaseRequest, error) {
	var req ReleaseRequest
	if len(b) > MaxReleaseBody {
		return req, fmt.Errorf("%w: release body: longer than %d bytes", claimcheck.ErrInvalidArgument, MaxReleaseBody)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return req, nil
	}
	if err := DecodeJSON(b, `release body (want {"consumer":"NAME"} or nothing)`, &req); err != nil {
		return ReleaseRequest{}, err
	}
	// What the name may hold (no control characters: it is echoed in
	// errors, events and stat answers) is the store's rule, checked by
	// Release.
	return req, nil
}
