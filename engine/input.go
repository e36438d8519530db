package engine

import (
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
// (claimcheck.CheckText, which the HTTP API's parsers use too).
func checkText(field, s string) error { return claimcheck.CheckText(field, s) }

// checkPutText applies checkText to every free-text field of a put.
func checkPutText(opts *claimcheck.PutOptions) error {
	if err := checkText("content type", opts.ContentType); err != nil {
		return err
	}
	for k, v := range opts.Labels {
		if err := checkText("label key", k); err != nil {
			return err
		}
		if err := checkText("label "+quoteShort(k), v); err != nil {
			return err
		}
	}
	for _, n := range opts.ConsumerNames {
		if err := checkText("consumer name", n); err != nil {
			return err
		}
	}
	return nil
}

// quoteShort quotes a value for an error message, shortened.
func quoteShort(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}
