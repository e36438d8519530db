package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/claimcheck/claimcheck"
)

// DecodeJSON decodes b, a request body, into v strictly: exactly one JSON
// value, no field v does not have, nothing but white space after it
// ("{…}{…}" and "{…}x" are refused: the second object used to be ignored
// without a word). what names the body in errors ("upload init body").
// Errors wrap claimcheck.ErrInvalidArgument.
func DecodeJSON(b []byte, what string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %v", claimcheck.ErrInvalidArgument, what, jsonReason(err))
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return fmt.Errorf("%w: %s: want one JSON object, found more data after it", claimcheck.ErrInvalidArgument, what)
	default:
		return fmt.Errorf("%w: %s: want one JSON object, found trailing data after it: %v", claimcheck.ErrInvalidArgument, what, jsonReason(err))
	}
}

// jsonReason is a decoder error in the body's terms: the field by its
// JSON name, never the Go type.
func jsonReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %q: want %s, got a JSON %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return fmt.Sprintf("want a JSON object, got a JSON %s", te.Value)
	}
	return err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	}
	return "another type"
}
