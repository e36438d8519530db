package engine

import (
	"errors"
	"fmt"
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

// Limits on put options; the HTTP layer enforces header sizes too.
const (
	maxLabels       = 32
	maxLabelKeyLen  = 63
	maxLabelValLen  = 256
	maxConsumers    = 1000
	maxConsumerName = 128
)

// checkPutOptions validates opts against the policy and returns the
// number of releases that finish the claim. The engine is the one
// validator of put options: every refusal of a field is a
// *claimcheck.FieldError naming the field as the HTTP API's upload body
// spells it ("labels", "consumer_names"), which the HTTP server maps to
// the header the client wrote.
func checkPutOptions(opts *claimcheck.PutOptions, pol claimcheck.Policy) (int, error) {
	if err := checkPutText(opts); err != nil {
		return 0, err
	}
	if opts.Size < 0 {
		return 0, putFieldErr("size", strconv.FormatInt(opts.Size, 10), "must not be negative")
	}
	if opts.Size > int64(pol.MaxSize) {
		return 0, fmt.Errorf("%w: payload of %d bytes exceeds max_size %s (%d bytes)", claimcheck.ErrTooLarge, opts.Size, pol.MaxSize, int64(pol.MaxSize))
	}
	if opts.Digest != "" && !claimcheck.ValidDigest(opts.Digest) {
		return 0, putFieldErr("digest", quoteShort(opts.Digest), "want sha256:<64 lowercase hex digits>")
	}
	if len(opts.ContentType) > 255 {
		return 0, putFieldErr("content_type", "", "longer than 255 characters")
	}
	if len(opts.Labels) > maxLabels {
		return 0, putFieldErr("labels", "", fmt.Sprintf("%d labels, at most %d", len(opts.Labels), maxLabels))
	}
	for k, v := range opts.Labels {
		if k == "" || len(k) > maxLabelKeyLen {
			return 0, putFieldErr("labels", quoteShort(k), fmt.Sprintf("a key has 1 to %d characters", maxLabelKeyLen))
		}
		if len(v) > maxLabelValLen {
			return 0, putFieldErr("labels", quoteShort(k), fmt.Sprintf("value longer than %d characters", maxLabelValLen))
		}
	}
	n := opts.Consumers
	if len(opts.ConsumerNames) > 0 {
		if n != 0 && n != len(opts.ConsumerNames) {
			return 0, putFieldErr("consumers", strconv.Itoa(n), fmt.Sprintf("does not match the %d consumer names given", len(opts.ConsumerNames)))
		}
		seen := map[string]bool{}
		for _, name := range opts.ConsumerNames {
			if name == "" || len(name) > maxConsumerName {
				return 0, putFieldErr("consumer_names", quoteShort(name), fmt.Sprintf("a name has 1 to %d characters", maxConsumerName))
			}
			if seen[name] {
				return 0, putFieldErr("consumer_names", quoteShort(name), "given twice")
			}
			seen[name] = true
		}
		n = len(opts.ConsumerNames)
	}
	if n < 0 || n > maxConsumers {
		return 0, putFieldErr("consumers", strconv.Itoa(n), fmt.Sprintf("want 0 to %d", maxConsumers))
	}
	if n == 0 {
		n = 1
	}
	return n, nil
}
