package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// errorBody returns the wire form of err and its status, using the one
// table in package api. Errors outside it are logged here with their
// details and answered as "internal", unless the client went away (the
// request's context is done), in which case nobody reads the answer and
// the error is only logged.
func (s *Server) errorBody(r *http.Request, err error) (api.Error, int) {
	body, status, ok := api.ErrorOf(err)
	switch {
	case ok:
		if status >= http.StatusInternalServerError {
			s.log.WarnContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
			body.Message = serverSideText(err, body.Message)
		}
		return body, status
	case r.Context().Err() != nil:
		s.log.InfoContext(r.Context(), "request abandoned by the client", "method", r.Method, "path", r.URL.Path, "err", err)
		return api.Error{Code: api.CodeCanceled, Message: err.Error()}, api.StatusClientClosedRequest
	default:
		s.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		return api.Internal()
	}
}

// serverSideText is what a client reads of a failure on the server's
// side: its own words, unless the failure is a connection of the server
// (to its database, storage or DNS). Then the text would name the
// addresses and host names inside the operator's network, to any caller
// (/readyz needs no key), so it says only which kind of thing failed;
// the log has the whole error.
func serverSideText(err error, text string) string {
	var notReady notReadyError
	if errors.As(err, &notReady) {
		err = notReady.err // not unwrapped in general: it answers unavailable, whatever it holds
	}
	var op *net.OpError
	var dns *net.DNSError
	var ue *url.Error
	if errors.As(err, &op) || errors.As(err, &dns) || errors.As(err, &ue) {
		return "a connection of the server to its database or storage failed; the details are in the server's log"
	}
	return text
}

// writeError answers err as a JSON error. It is the only function that
// turns an error into a response (the payload stream's trailer uses
// errorBody too).
//
// Every 503 carries Retry-After: the server, its database or its storage
// could not answer now (a metadata operation past metadata_timeout, ADR
// 0286), and a client's retry after a pause is what fixes that.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	body, status := s.errorBody(r, err)
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", retryAfterSeconds(unavailableRetryAfter))
	}
	writeJSON(w, status, body)
}

// unavailableRetryAfter is the Retry-After of a 503: short, because the
// request already waited up to its bound before it was answered.
const unavailableRetryAfter = time.Second

// writeJSON answers v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own types are written; they always marshal.
		panic(fmt.Sprintf("server: marshal %T: %v", v, err))
	}
	h := w.Header()
	h.Set("Content-Type", api.ContentTypeJSON)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// A client gone before its error is read has nobody to tell.
	_, _ = w.Write(append(b, '\n'))
}

// notReadyError is a failed readiness check. Whatever the check returned,
// the answer is 503 unavailable: that is what a load balancer acts on.
type notReadyError struct{ err error }

func (e notReadyError) Error() string { return "not ready: " + e.err.Error() }

func (e notReadyError) Is(target error) bool { return target == claimcheck.ErrUnavailable }

// invalidf returns an ErrInvalidArgument saying what was wrong.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", claimcheck.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// putHeaders names where a put carries each of its options, by the
// field a *claimcheck.FieldError of the store names.
var putHeaders = map[string]string{
	"digest":         api.HeaderDigest,
	"consumers":      api.HeaderConsumers,
	"consumer_names": api.HeaderConsumerNames,
	"labels":         api.HeaderLabels,
	"content_type":   "Content-Type",
	"size":           "Content-Length",
}

// headerError reports the store's refusal of a put option under the
// header the client wrote it in: the store validates the options, the
// server only decodes the headers, so this is where a field becomes a
// header again. Other errors are returned as they are.
func headerError(err error) error {
	fe, ok := errors.AsType[*claimcheck.FieldError](err)
	if !ok {
		return err
	}
	header, ok := putHeaders[fe.Field]
	if !ok {
		return err
	}
	msg := fe.Reason
	if fe.Got != "" {
		msg += " (got " + fe.Got + ")"
	}
	return invalidf("header %s: %s", header, msg)
}

// clip shortens a value echoed in an error (a path value), so a message
// stays small whatever the client sent.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
