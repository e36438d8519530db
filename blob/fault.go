package blob

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"
)

// A storage error says one of two things about an object (ADR 0255):
// the object itself cannot be read as stored (it is missing, or the
// service answers about this one object with an error of its own), or
// the service did not answer at all (an outage, a timeout, throttling).
// Only the first can ever make a blob damaged, and only after the caller
// has seen it persist while the service answers other requests
// (internal/integrity); the second is passing unavailability and never
// marks anything.

// Fault is what a storage error means for the object it was about.
type Fault int

const (
	// FaultNone: no error.
	FaultNone Fault = iota
	// FaultMissing: the object does not exist (ErrNotFound).
	FaultMissing
	// FaultObject: the service answered about this object with an error
	// of its own (HTTP 500, 501, 505 and above other than the ones of
	// FaultUnavailable; gocloud's Internal code; EIO reading a file).
	// One such answer may be passing: it is damage only when it
	// persists while the service answers other requests.
	FaultObject
	// FaultUnavailable: the service did not answer about the object:
	// connection refused or reset, timeouts, cancelled requests, 502,
	// 503, 504, 429, 408, refused credentials, a call that made no
	// progress within storage_timeout (NoProgressError), and every error
	// not known to be about the object.
	FaultUnavailable
)

func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "none"
	case FaultMissing:
		return "missing"
	case FaultObject:
		return "object"
	default:
		return "unavailable"
	}
}

// ErrObjectFault marks an error a backend knows is the service's answer
// about the object itself (gocloudbucket wraps gocloud's Internal code
// with it). FaultOf reports FaultObject for it.
var ErrObjectFault = errors.New("blob: the storage answered with an error about the object")

// StatusError carries the HTTP status a storage service answered with,
// for backends whose driver's errors do not say it in a way FaultOf
// reads (gocloudbucket.Options.HTTPStatus wraps them in it).
type StatusError struct {
	Status int
	Err    error
}

func (e *StatusError) Error() string       { return fmt.Sprintf("HTTP %d: %v", e.Status, e.Err) }
func (e *StatusError) Unwrap() error       { return e.Err }
func (e *StatusError) HTTPStatusCode() int { return e.Status }

// FaultOf classifies err (ADR 0255). The HTTP status is read from any
// error of the chain with an HTTPStatusCode() int method: the AWS SDK's
// response errors and StatusError have one.
func FaultOf(err error) Fault {
	switch {
	case err == nil:
		return FaultNone
	case errors.Is(err, ErrNotFound):
		return FaultMissing
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return FaultUnavailable
	case errors.Is(err, ErrObjectFault):
		return FaultObject
	}
	if _, ok := errors.AsType[*NoProgressError](err); ok {
		return FaultUnavailable
	}
	var hs interface{ HTTPStatusCode() int }
	if errors.As(err, &hs) {
		return faultOfStatus(hs.HTTPStatusCode())
	}
	// A file that the disk cannot read back, or an object path that is
	// not a file: the object, not the file system, is at fault.
	if errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EISDIR) {
		return FaultObject
	}
	return FaultUnavailable
}

// RangeNotSatisfiable reports whether err is a storage service's 416
// answer: a range read that starts at or past the object's end. Stores
// turn it into an empty read (Store.NewRangeReader), so that an object
// shorter than the caller recorded reads as short, which is damage, and
// never as the storage being unavailable.
func RangeNotSatisfiable(err error) bool {
	var hs interface{ HTTPStatusCode() int }
	return errors.As(err, &hs) && hs.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}

func faultOfStatus(status int) Fault {
	switch {
	case status == http.StatusNotFound:
		return FaultMissing
	case status == http.StatusBadGateway, status == http.StatusServiceUnavailable, status == http.StatusGatewayTimeout,
		status == http.StatusTooManyRequests, status == http.StatusRequestTimeout:
		return FaultUnavailable
	case status >= 500:
		return FaultObject
	default:
		// Refused credentials, a bad request: configuration, never the
		// object's bytes.
		return FaultUnavailable
	}
}
