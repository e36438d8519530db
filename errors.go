package claimcheck

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Every error the store returns wraps one of these (or is
// a *GoneError), on both sides of the HTTP API: the server maps them to
// stable codes and the client maps the codes back, so errors.Is works the
// same in embedded and remote mode.
var (
	// ErrNotFound: no such claim (or namespace) is visible to the caller.
	ErrNotFound = errors.New("not found")
	// ErrGone: the claim existed but has been finished. The concrete error
	// is a *GoneError that says why.
	ErrGone = errors.New("gone")
	// ErrExpired: the claim passed its max_age. A *GoneError with reason
	// ReasonExpired matches both ErrGone and ErrExpired.
	ErrExpired = errors.New("expired")
	// ErrChecksumMismatch: the stored bytes do not hash to the claim's
	// digest (or an upload does not match the digest it declared). The data
	// is never handed over as good.
	ErrChecksumMismatch = errors.New("checksum mismatch")
	// ErrQuotaExceeded: the namespace's byte or claim quota is used up.
	ErrQuotaExceeded = errors.New("quota exceeded")
	// ErrTooLarge: the payload is larger than the namespace's max_size.
	ErrTooLarge = errors.New("too large")
	// ErrInvalidArgument: a malformed ref, config value or request field.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrUnauthenticated: no valid credentials were presented.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: the credentials do not allow the operation.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrRateLimited: the caller sent too much at once (a per-key rate or
	// stream limit of the server); retry after the time the answer says.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: a backend (database, object storage) failed; the
	// operation may succeed when retried.
	ErrUnavailable = errors.New("unavailable")
)

// GoneReason says why a claim was finished.
type GoneReason string

// The reasons a claim can be finished. This is the one list of them: the
// metadata store records these strings (package meta takes its constants
// from here), the HTTP API answers them in the "reason" of a gone error,
// and docs/HTTP.md lists them (a test checks it against GoneReasons).
const (
	ReasonExpired        GoneReason = "expired"             // max_age passed
	ReasonReleased       GoneReason = "released"            // consumers released it and the retention window ended
	ReasonReadRetention  GoneReason = "read_retention_over" // delete_after_read: the redelivery window after the first read ended
	ReasonDeleted        GoneReason = "deleted"             // the producer deleted it
	ReasonNeverConfirmed GoneReason = "never_confirmed"     // a direct upload was not confirmed in time
	ReasonAborted        GoneReason = "aborted"             // the put failed before it committed (nothing was stored)
	ReasonKeyDestroyed   GoneReason = "key_destroyed"       // the namespace's data key was destroyed (crypto-shredding): the bytes can never be read again
)

// GoneReasons lists every GoneReason, in the order above.
var GoneReasons = []GoneReason{
	ReasonExpired, ReasonReleased, ReasonReadRetention, ReasonDeleted,
	ReasonNeverConfirmed, ReasonAborted, ReasonKeyDestroyed,
}

// GoneError is returned for a claim that existed but has been finished.
// It matches ErrGone, and ErrExpired too when the reason is ReasonExpired,
// so a consumer can tell "too late" from "never existed" (ErrNotFound) and
// from "corrupt" (ErrChecksumMismatch).
type GoneError struct {
	ID     string
	Reason GoneReason
	At     time.Time // when the claim was finished; zero if unknown
}

func (e *GoneError) Error() string {
	if e.Reason == ReasonExpired {
		return fmt.Sprintf("claim %s expired", e.ID)
	}
	return fmt.Sprintf("claim %s is gone (%s)", e.ID, e.Reason)
}

// Is makes errors.Is(err, ErrGone) and, for expired claims,
// errors.Is(err, ErrExpired) true.
func (e *GoneError) Is(target error) bool {
	return target == ErrGone || (target == ErrExpired && e.Reason == ReasonExpired)
}

// invalidf returns an ErrInvalidArgument that says which field or value was
// wrong.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// Permanent reports whether an error from redeeming a reference will be
// the same on every retry: the claim is gone or unknown, its bytes are
// corrupt, or the reference is malformed. Consumers of a message bus use
// it to stop redelivering a message that can never be resolved.
func Permanent(err error) bool {
	return errors.Is(err, ErrGone) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrChecksumMismatch) || errors.Is(err, ErrInvalidArgument)
}

// ResolveFailure names why resolving a reference failed, for metric
// labels: the gone reason, not_found, checksum_mismatch, invalid_ref, or
// unavailable for anything a retry may fix.
func ResolveFailure(err error) string {
	var gone *GoneError
	switch {
	case errors.As(err, &gone):
		return string(gone.Reason)
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrChecksumMismatch):
		return "checksum_mismatch"
	case errors.Is(err, ErrInvalidArgument):
		return "invalid_ref"
	default:
		return "unavailable"
	}
}
