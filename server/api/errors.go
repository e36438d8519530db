package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/claimcheck/claimcheck"
)

// The stable error codes. A client tells errors apart by code, never by
// HTTP status: several codes share a status (gone and expired are both
// 410; quota_exceeded and permission_denied are both 403).
const (
	CodeNotFound         = "not_found"
	CodeGone             = "gone"
	CodeExpired          = "expired"
	CodeChecksumMismatch = "checksum_mismatch"
	CodeQuotaExceeded    = "quota_exceeded"
	CodeTooLarge         = "too_large"
	CodeInvalidArgument  = "invalid_argument"
	CodeUnauthenticated  = "unauthenticated"
	CodePermissionDenied = "permission_denied"
	CodeUnavailable      = "unavailable"
	CodeRateLimited      = "rate_limited"

	// CodeInternal is every error outside the table. The server logs the
	// details and answers only a generic message.
	CodeInternal = "internal"
	// CodeNoRoute and CodeMethodNotAllowed answer requests that match no
	// route. They are kept apart from not_found so that a client talking
	// to the wrong URL (or to an older server) never mistakes that for a
	// missing claim.
	CodeNoRoute          = "no_route"
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeCanceled is recorded when the client went away before the
	// answer; nobody receives it, it shows up in metrics and logs.
	CodeCanceled = "canceled"
)

// StatusClientClosedRequest is the status recorded (in metrics) for
// requests whose client disconnected. It is never seen by a client; the
// number is nginx's.
const StatusClientClosedRequest = 499

// Error is the JSON body of every error answer, and the value of the
// TrailerError trailer.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Reason is the claimcheck.GoneReason of gone and expired answers.
	Reason string `json:"reason,omitempty"`
	// At is when a gone claim was finished, when the server knows.
	At time.Time `json:"at,omitzero"`
}

// errorCodes is the one table between sentinel errors and the wire. Order
// matters: an error is given the first code it matches, so the more
// specific entries come first (an expired *GoneError matches both
// ErrExpired and ErrGone; an error may wrap several sentinels).
var errorCodes = []struct {
	err    error
	code   string
	status int
}{
	{claimcheck.ErrExpired, CodeExpired, http.StatusGone},
	{claimcheck.ErrGone, CodeGone, http.StatusGone},
	{claimcheck.ErrNotFound, CodeNotFound, http.StatusNotFound},
	// 416 with Content-Range: bytes */SIZE (ranges.go).
	{claimcheck.ErrRangeNotSatisfiable, CodeRangeNotSatisfiable, http.StatusRequestedRangeNotSatisfiable},
	{claimcheck.ErrChecksumMismatch, CodeChecksumMismatch, http.StatusUnprocessableEntity},
	{claimcheck.ErrTooLarge, CodeTooLarge, http.StatusRequestEntityTooLarge},
	// 403, not 429: a used-up quota is not a rate limit that a retry
	// after a pause fixes, and generic retry logic must not hammer it.
	{claimcheck.ErrQuotaExceeded, CodeQuotaExceeded, http.StatusForbidden},
	{claimcheck.ErrUnauthenticated, CodeUnauthenticated, http.StatusUnauthorized},
	{claimcheck.ErrPermissionDenied, CodePermissionDenied, http.StatusForbidden},
	{claimcheck.ErrInvalidArgument, CodeInvalidArgument, http.StatusBadRequest},
	{claimcheck.ErrUnavailable, CodeUnavailable, http.StatusServiceUnavailable},
	{claimcheck.ErrHeld, CodeHeld, http.StatusConflict}, // legal hold (holds.go)
	// 429 with Retry-After: a per-key rate or stream limit of the server.
	{claimcheck.ErrRateLimited, CodeRateLimited, http.StatusTooManyRequests},
}

// ErrorOf returns the wire form of err and its HTTP status. ok is false
// when err matches no sentinel: the caller must log it and answer
// CodeInternal (see Internal) instead of leaking its text.
func ErrorOf(err error) (body Error, status int, ok bool) {
	for _, e := range errorCodes {
		if !errors.Is(err, e.err) {
			continue
		}
		body = Error{Code: e.code, Message: err.Error()}
		if gone, isGone := errors.AsType[*claimcheck.GoneError](err); isGone {
			body.Reason = string(gone.Reason)
			body.At = gone.At
		}
		return body, e.status, true
	}
	return Error{}, 0, false
}

// Internal is the body answered for errors outside the table.
func Internal() (Error, int) {
	return Error{Code: CodeInternal, Message: "internal server error; the details are in the server's log"}, http.StatusInternalServerError
}

// StatusOf returns the HTTP status the server answers for code, and
// 0 for a code it does not know.
func StatusOf(code string) int {
	for _, e := range errorCodes {
		if e.code == code {
			return e.status
		}
	}
	switch code {
	case CodeInternal:
		return http.StatusInternalServerError
	case CodeNoRoute:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	}
	return 0
}

// Sentinel returns the Go error that e stands for: the root package's
// sentinel error for its code, or a *claimcheck.GoneError (with the
// reason, and id, the claim the request was about) for gone and expired
// answers. It returns nil for codes outside the table (internal, no_route,
// unknown codes from a newer server).
func (e Error) Sentinel(id string) error {
	switch e.Code {
	case CodeGone, CodeExpired:
		reason := claimcheck.GoneReason(e.Reason)
		if e.Code == CodeExpired {
			// An expired answer always means the max_age deadline, whatever
			// the reason field says, so that ErrExpired matches.
			reason = claimcheck.ReasonExpired
		}
		return &claimcheck.GoneError{ID: id, Reason: reason, At: e.At}
	}
	for _, c := range errorCodes {
		if c.code == e.Code {
			return c.err
		}
	}
	return nil
}
