package api

import (
	"bytes"
	"encoding/json"
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
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return ReleaseRequest{}, fmt.Errorf(`%w: release body: want {"consumer":"NAME"} or nothing: %v`, claimcheck.ErrInvalidArgument, err)
	}
	if dec.More() {
		return ReleaseRequest{}, fmt.Errorf(`%w: release body: want one JSON object, found more`, claimcheck.ErrInvalidArgument)
	}
	return req, nil
}
