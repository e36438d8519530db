package engine

import (
	"errors"
	"strconv"

	"github.com/claimcheck/claimcheck"
)

// Input hardening for the free-text fields a producer sends with a put
// (content type, labels, consumer names). They are stored as JSON, echoed
// in stat answers and response headers, and show up in logs and in the
// CLI's output, so they must be valid UTF-8 without control characters: a
// newline in a label must not forge a log line or a header, an escape
// sequence must not reach an operator's terminal. Namespace names, which
// become object-key prefixes, are held to a stricter pattern still
// (ValidateNamespace), and object keys are built only from a valid
// namespace and a generated id (objectKey), so no field a client sends
// can reach outside its namespace's prefix.

// checkText refuses invalid UTF-8 and control characters in a field
// (claimcheck.CheckText).
func checkText(field, s string) error { return claimcheck.CheckText(field, s) }

// checkPutText applies checkText to every free-text field of a put. The
// fields are named as in putFieldErr.
func checkPutText(opts *claimcheck.PutOptions) error {
	if err := checkText("content_type", opts.ContentType); err != nil {
		return err
	}
	for k, v := range opts.Labels {
		if err := checkText("labels", k); err != nil {
			return err
		}
		if err := checkText("labels", v); err != nil {
			// Say whose value it is; the key itself passed.
			if fe, ok := errors.AsType[*claimcheck.FieldError](err); ok {
				return putFieldErr("labels", "", "the value of "+quoteShort(k)+": "+fe.Reason)
			}
			return err
		}
	}
	for _, n := range opts.ConsumerNames {
		if err := checkText("consumer_names", n); err != nil {
			return err
		}
	}
	return nil
}

// putFieldErr is the refusal of a put option: field is the option's name
// in the HTTP API's upload body ("labels", "consumer_names",
// "consumers", "digest", "content_type", "size"), got the value,
// already quoted when it is text.
func putFieldErr(field, got, reason string) error {
	return &claimcheck.FieldError{Field: field, Got: got, Reason: reason}
}

// quoteShort quotes a value for an error message, shortened.
func quoteShort(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}
