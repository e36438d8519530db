package claimcheck

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Sequence numbers in JSON (ADR 0273): seqs and cursors are Unix
// nanoseconds, 19 digits, past what a JavaScript number holds exactly,
// so they are written as JSON strings (the ",string" tag option).
// Decoding takes a string or a number, as servers before wrote them.

// UnmarshalJSON decodes an event whose seq is a string or a number.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event // without this method
	v := struct {
		*plain
		Seq json.Number `json:"seq"`
	}{plain: (*plain)(e)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return SeqFromJSON("seq", v.Seq, &e.Seq)
}

// UnmarshalJSON decodes a subscription whose cursor is a string or a
// number.
func (s *Subscription) UnmarshalJSON(b []byte) error {
	type plain Subscription // without this method
	v := struct {
		*plain
		Cursor json.Number `json:"cursor"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return SeqFromJSON("cursor", v.Cursor, &s.Cursor)
}

// SeqFromJSON sets *to from a sequence number decoded as a json.Number
// (which takes both a JSON number and a JSON string of digits); empty
// (absent) is 0. field names the key in errors.
func SeqFromJSON(field string, n json.Number, to *int64) error {
	if n == "" {
		*to = 0
		return nil
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %q is not a sequence number (an integer, as a string or a number)", field, string(n))
	}
	*to = v
	return nil
}
